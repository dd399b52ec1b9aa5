// Package queue benchmarks the durable job queue (issue 3) through the server
// binary: how fast the server's runner drains a queue (Drain), how fast the API
// commits enqueues (Enqueue), and how long a committed job waits for its handler
// (Latency). Each scenario provisions a deployment of its own
// (harness.Env.NewDeployment): a new database, migrated, with the bench account,
// kept for all its rounds and dropped after them. The bench never runs the queue's
// code itself: it seeds and counts jobs with SQL (harness.SQL, Postgres only) and
// enqueues through the API.
package queue

import (
	"context"
	"math"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// warnAsyncCommit logs when Postgres does not wait for each commit's WAL flush.
// The queue's commits and pgbench's run under the server's setting alike, so the
// ratio stays fair either way; but the targets assume durable commits.
func warnAsyncCommit(ctx context.Context, env *harness.Env, db *harness.SQL) error {
	setting, err := db.String(ctx, "SHOW synchronous_commit")
	if err != nil {
		return err
	}
	if setting != "on" {
		env.Log.Warn("synchronous_commit is not on: commits do not wait for their WAL flush, on either side", "synchronous_commit", setting)
	}
	return nil
}

// topUpTarget is how many jobs to have pending before a slice of d: at least
// minPending, and twice what the fastest slice so far would complete in d, so that
// a slice somewhat faster than any before still cannot run dry.
func topUpTarget(minPending int, fastest float64, d time.Duration) int {
	return max(minPending, int(math.Ceil(2*fastest*d.Seconds())))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
