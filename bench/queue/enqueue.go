package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/bench/email"
	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Enqueue measures committed enqueues through the server's API: Producers lean
// clients in a closed loop, each posting an email send to an API-only server
// (--jobs=false, so no runner takes the jobs). An email send is the API's smallest
// write that enqueues: one call of the shared transaction (as every send use case
// enqueues, concurrent calls sharing a database transaction) that commits the email
// and its one delivery job. The operations of a slice are the jobs it committed,
// counted in the table before and after it; a send answered without its job, or a
// job without an answer, is a failure.
//
// The server (a pool of MaxConns) is started for each slice and stopped after it,
// so it holds no connections while the baseline runs: a pool of 64 and 64 pgbench
// clients would not fit in Postgres's default 100 connections at once. Before the
// clock starts the load runs for Warm, untimed, so that the pool's connections are
// open and the server warm, as pgbench leaves its connection set-up out of its rate.
// Jobs and emails accumulate; the tables are emptied between slices, untimed, once
// the jobs hold more than TruncateAbove rows.
type Enqueue struct {
	// Producers is the number of concurrent producers.
	Producers int
	// MaxConns is the server's pool (--db-max-conns).
	MaxConns int
	// Warm is how long the load runs, untimed, before each slice.
	Warm time.Duration
	// TruncateAbove is the table size past which it is emptied between slices.
	TruncateAbove int
}

// Setup provisions the scenario's deployment with the bench's sender address and
// returns the enqueue slice.
func (e Enqueue) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	if e.Producers < 1 || e.MaxConns < 1 {
		return nil, fmt.Errorf("want Producers and MaxConns ≥ 1, have %d and %d", e.Producers, e.MaxConns)
	}
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	if err := warnAsyncCommit(ctx, env, db); err != nil {
		return nil, err
	}
	eq := &enqueuer{Enqueue: e, d: d, db: db}
	api, err := eq.serve(ctx)
	if err != nil {
		return nil, err
	}
	if err := email.CreateAddress(ctx, api); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	return eq.slice, nil
}

type enqueuer struct {
	Enqueue
	d  *harness.Deployment
	db *harness.SQL
}

// serve starts the API-only server of a slice.
func (e *enqueuer) serve(ctx context.Context) (*harness.Switchboard, error) {
	return e.d.Serve(ctx, append(email.Flags(), "--jobs=false", "--db-max-conns", strconv.Itoa(e.MaxConns))...)
}

const countJobs = "SELECT count(*) FROM jobs"

func (e *enqueuer) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	api, err := e.serve(ctx)
	if err != nil {
		return harness.Sample{}, err
	}
	defer api.Stop()
	load, err := email.NewSendLoad(api, e.Producers)
	if err != nil {
		return harness.Sample{}, err
	}
	if _, err := load.Run(ctx, e.Warm); err != nil {
		return harness.Sample{}, err
	}
	before, err := e.db.Int(ctx, countJobs)
	if err != nil {
		return harness.Sample{}, err
	}
	s, err := load.Run(ctx, d)
	if err != nil {
		return harness.Sample{}, err
	}
	after, err := e.db.Int(ctx, countJobs)
	if err != nil {
		return harness.Sample{}, err
	}
	if err := api.Stop(); err != nil {
		return harness.Sample{}, err
	}
	if jobs := after - before; jobs != s.Ops {
		s.Failed += max(jobs-s.Ops, s.Ops-jobs)
		if s.FirstFailure == "" {
			s.FirstFailure = fmt.Sprintf("%d sends answered, %d jobs committed", s.Ops, jobs)
		}
		s.Ops = min(jobs, s.Ops)
	}
	if after > e.TruncateAbove {
		if err := e.db.Exec(ctx, "TRUNCATE jobs, emails"); err != nil {
			return harness.Sample{}, fmt.Errorf("empty the jobs table: %w", err)
		}
	}
	return s, nil
}
