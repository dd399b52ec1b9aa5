package cron_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

var parser = cronexpr.New()

// replicaConfig is one replica's periodic enqueuer, runs' handler and job
// runner, as bootstrap wires them, on a clock a test controls. Durations
// are of that clock, but Poll, Beat and Rescue, which are real time.
type replicaConfig struct {
	db    *store.DB
	store appcron.Store
	// enqueue is the enqueuer's store; store when nil.
	enqueue appcron.Store
	clock   appcron.Clock
	owner   string
	// workers and share are the runner's; 100 workers and no share bound
	// when 0.
	workers int
	// claimBatch bounds the runner's claims; its default when 0.
	claimBatch int
	share      float64
	lease      time.Duration
	// lookahead and lead are the enqueuer's; its defaults when 0.
	lookahead, lead time.Duration
	batch           int
	// enqueuePoll is the enqueuer's poll interval; its default when 0.
	enqueuePoll        time.Duration
	poll, beat, rescue time.Duration
	retryBackoff       func(int) time.Duration
	logger             *slog.Logger
}

// cronReplica is a started replica; stop ends it.
type cronReplica struct {
	enq    *appcron.Enqueuer
	worker *appcron.Worker
	run    *runner.Runner
	stop   func()
}

func startReplica(c replicaConfig) (*cronReplica, error) {
	if c.enqueue == nil {
		c.enqueue = c.store
	}
	if c.workers == 0 {
		c.workers = 100
	}
	if c.share == 0 {
		c.share = 1
	}
	if c.lease == 0 {
		c.lease = 3 * time.Second
	}
	if c.poll == 0 {
		c.poll = 10 * time.Millisecond
	}
	if c.beat == 0 {
		c.beat = 50 * time.Millisecond
	}
	if c.rescue == 0 {
		c.rescue = 20 * time.Millisecond
	}
	enq := appcron.NewEnqueuer(appcron.EnqueuerConfig{Store: c.enqueue, Parser: parser, Clock: c.clock, Batch: c.batch,
		PollInterval: c.enqueuePoll, Lookahead: c.lookahead, Lead: c.lead, Logger: c.logger})
	w := appcron.NewWorker(appcron.WorkerConfig{Store: c.store, Caller: loopback().NewCronCaller(), Clock: c.clock, Owner: c.owner,
		RetryBackoff: c.retryBackoff, Logger: c.logger})
	r, err := runner.New(c.db.JobQueue(), c.db, runner.Config{
		Workers: c.workers, ClaimBatch: c.claimBatch, AccountShare: c.share, PollInterval: c.poll, HeartbeatInterval: c.beat, RescueInterval: c.rescue,
		Now: c.clock.Now, WorkerID: w.Owner(), Logger: c.logger,
	}, runner.Kind{Name: appcron.RunKind, Handler: w, Lease: c.lease, Timeout: cron.MaxTimeout + time.Minute})
	if err != nil {
		return nil, err
	}
	if err := r.Start(context.Background()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		enq.Run(ctx)
	}()
	return &cronReplica{enq: enq, worker: w, run: r, stop: func() {
		cancel()
		<-done
		stopCtx, stopped := context.WithTimeout(context.Background(), 30*time.Second)
		defer stopped()
		_ = r.Stop(stopCtx)
	}}, nil
}
