package queue

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Drain measures how fast a runner empties a queue of jobs whose handler does
// nothing: the queue's own cost per job (claim, dispatch, recording the completion).
//
// Before each slice, untimed, completed jobs are deleted (retention pruning, which
// the server does a day later), the queue is topped up so the slice cannot run dry
// (see topUpTarget), and the table is analysed (see below). The slice then starts a
// new runner (a Runner starts once) and stops it when the slice's time is up; Stop
// waits for the jobs still running and records their completions. The runner thus
// works during its slices only, never while the baseline runs.
//
// A job counts once its completion is recorded: the operations of a slice are the
// rows that moved to state completed (a count(*) before and after Stop), not handler
// calls, which would include completions still waiting in the runner's batch. Handler
// calls without a recorded completion count as failures.
//
// On Postgres the slice's clock also covers a VACUUM of the table after Stop: each
// job leaves two dead row versions (claimed, completed) and the claims slow down
// until they are vacuumed, so cleaning them up is part of sustaining the rate. A
// server with autovacuum does this in the background; the bench does it explicitly so
// that it neither depends on autovacuum (off on some test servers, which leaves the
// claim planned on stale statistics: a sort of every pending job per claim) nor lands
// in a baseline slice. The untimed ANALYZE before the slice stands in for
// autovacuum's.
type Drain struct {
	// Runner tunes the runner; its Logger defaults to the run's.
	Runner runner.Config
	// MaxConns bounds the scenario's pool: the runner's claims and completions, the
	// top-up and the counts.
	MaxConns int
	// MinPending is the least number of due jobs queued before each slice. The
	// top-up goes higher when the fastest slice so far suggests a slice could use
	// more than half of the queue (see topUpTarget).
	MinPending int
}

// Setup opens the scenario's database and returns the drain slice.
func (d Drain) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	db, err := openDB(ctx, env, d.MaxConns)
	if err != nil {
		return nil, err
	}
	cfg := d.Runner
	if cfg.Logger == nil {
		cfg.Logger = env.Log
	}
	dr := &drainer{Drain: d, db: db, cfg: cfg, log: env.Log}
	return dr.slice, nil
}

type drainer struct {
	Drain
	db  *store.DB
	cfg runner.Config
	log *slog.Logger
	// fastest is the highest rate of a slice so far, in jobs per second.
	fastest float64
}

func (d *drainer) slice(ctx context.Context, dur time.Duration) (harness.Sample, error) {
	// Untimed: what retention pruning does a day later, so every slice starts on a
	// table of the same size; the top-up; and the statistics the claim's plan needs,
	// as autovacuum would keep them.
	t0 := time.Now()
	if _, err := d.db.Bun().ExecContext(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, fmt.Errorf("delete completed jobs: %w", err)
	}
	t1 := time.Now()
	if err := d.topUp(ctx, topUpTarget(d.MinPending, d.fastest, dur)); err != nil {
		return harness.Sample{}, err
	}
	t2 := time.Now()
	if err := d.vacuum(ctx, "VACUUM (ANALYZE) jobs"); err != nil {
		return harness.Sample{}, err
	}
	d.log.Debug("queue ready", "delete", t1.Sub(t0).Round(time.Millisecond), "top_up", t2.Sub(t1).Round(time.Millisecond), "analyze", time.Since(t2).Round(time.Millisecond))
	before, err := count(ctx, d.db, countCompleted)
	if err != nil {
		return harness.Sample{}, err
	}
	var handled atomic.Int64
	r, err := runner.New(d.db.Repos(), d.db, d.cfg, runner.Kind{
		Name: Kind,
		Handler: runner.HandlerFunc(func(context.Context, jobs.Job) error {
			handled.Add(1)
			return nil
		}),
	})
	if err != nil {
		return harness.Sample{}, err
	}
	start := time.Now()
	if err := r.Start(ctx); err != nil {
		return harness.Sample{}, err
	}
	slept := sleep(ctx, dur)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	stopErr := r.Stop(stopCtx)
	cancel()
	if slept != nil {
		return harness.Sample{}, slept
	}
	// The slice's dead rows are its own cost: cleaning them up is timed.
	ran := time.Since(start)
	if err := d.vacuum(ctx, "VACUUM jobs"); err != nil {
		return harness.Sample{}, err
	}
	elapsed := time.Since(start)
	d.log.Info("drain slice", "runner_ran", ran.Round(time.Millisecond), "vacuum", (elapsed - ran).Round(time.Millisecond))
	after, err := count(ctx, d.db, countCompleted)
	if err != nil {
		return harness.Sample{}, err
	}
	left, err := count(ctx, d.db, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	s := harness.Sample{Ops: after - before, Elapsed: elapsed}
	if left == 0 {
		return harness.Sample{}, fmt.Errorf("the queue ran dry: the slice completed every one of its %d jobs, so its rate says only that it was at least %.0f jobs/s", s.Ops, s.Rate())
	}
	d.fastest = max(d.fastest, s.Rate())
	if lost := int(handled.Load()) - s.Ops; lost > 0 {
		s.Failed = lost
		s.FirstFailure = fmt.Sprintf("%d handler calls without a recorded completion", lost)
	}
	if stopErr != nil {
		s.Failed++
		s.FirstFailure = stopErr.Error()
	}
	return s, nil
}

// vacuum runs a VACUUM statement on Postgres, and nothing on SQLite.
func (d *drainer) vacuum(ctx context.Context, stmt string) error {
	if d.db.Dialect() != store.Postgres {
		return nil
	}
	if _, err := d.db.Bun().ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// topUpTarget is how many jobs to have pending before a slice of d: at least
// minPending, and twice what the fastest slice so far would complete in d, so that
// a slice somewhat faster than any before still cannot run dry.
func topUpTarget(minPending int, fastest float64, d time.Duration) int {
	return max(minPending, int(math.Ceil(2*fastest*d.Seconds())))
}

// topUp enqueues jobs until want are pending. One job is enqueued through the
// store's EnqueueJob, so it is a row as the application writes it; the rest are copies
// of it made by one statement, which fills a queue in a fraction of the time
// per-job inserts take. It is untimed either way.
func (d *drainer) topUp(ctx context.Context, want int) error {
	pending, err := count(ctx, d.db, countPending)
	if err != nil {
		return err
	}
	need := want - pending
	if need <= 0 {
		return nil
	}
	template, err := d.db.Repos().EnqueueJob(ctx, job)
	if err != nil {
		return fmt.Errorf("top up the queue: %w", err)
	}
	if need == 1 {
		return nil
	}
	// A recursive count rather than generate_series, so it runs on SQLite too.
	_, err = d.db.Bun().ExecContext(ctx, `
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key, run_at, created_at)
		SELECT kind, state, payload, max_attempts, unique_key, pace_key, run_at, created_at
		FROM jobs, n WHERE jobs.id = ?`, need-1, template)
	if err != nil {
		return fmt.Errorf("top up the queue: %w", err)
	}
	return nil
}
