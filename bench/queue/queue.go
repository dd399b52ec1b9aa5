// Package queue benchmarks the durable job queue in-process, through the same store
// and runner the server uses: how fast a runner drains a queue (Drain), how fast
// producers commit enqueues (Enqueue), and how long a committed job waits for its
// handler (Latency). Each scenario gets a freshly migrated database of its own (see
// harness.Env.ScenarioDatabaseURL), kept for all its rounds and dropped after them.
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Kind is the job kind every scenario enqueues and serves.
const Kind = "bench"

// job is what every scenario enqueues: the smallest real job.
var job = jobs.EnqueueParams{Kind: Kind, Payload: []byte("{}")}

const (
	// stopTimeout bounds Runner.Stop; no-op handlers finish long before it.
	stopTimeout = 30 * time.Second
	// warmTimeout bounds opening a pool's connections before a slice.
	warmTimeout = 10 * time.Second
)

// newDatabase creates and migrates a database for the scenario being set up alone,
// dropped when the scenario ends, and returns its URL.
func newDatabase(ctx context.Context, env *harness.Env) (string, error) {
	url, err := env.ScenarioDatabaseURL(ctx)
	if err != nil {
		return "", err
	}
	db, err := store.Open(ctx, url, store.Options{MaxConns: 2})
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return "", err
	}
	if db.Dialect() == store.Postgres {
		// The queue's commits and pgbench's run under the server's setting alike, so
		// the ratio stays fair either way; but the targets assume durable commits.
		var setting string
		if err := db.Bun().NewRaw("SHOW synchronous_commit").Scan(ctx, &setting); err != nil {
			return "", fmt.Errorf("read synchronous_commit: %w", err)
		}
		if setting != "on" {
			env.Log.Warn("synchronous_commit is not on: commits do not wait for their WAL flush, on either side", "synchronous_commit", setting)
		}
	}
	return url, nil
}

// openDB creates and migrates a database for the scenario being set up and opens a
// pool of maxConns on it; pool and database are released when the scenario ends.
func openDB(ctx context.Context, env *harness.Env, maxConns int) (*store.DB, error) {
	url, err := newDatabase(ctx, env)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, url, store.Options{MaxConns: maxConns})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = db.Close() })
	return db, nil
}

// enqueueOne commits one job in its own transaction, as a use case does, and returns
// its id.
func enqueueOne(ctx context.Context, db *store.DB) (int64, error) {
	var id int64
	err := db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
		var err error
		id, err = r.EnqueueJob(ctx, job)
		return err
	})
	return id, err
}

// enqueueShared commits one job through the batched committer, as the send
// use cases enqueue: concurrent callers' jobs commit together.
func enqueueShared(ctx context.Context, db *store.DB) error {
	return db.Commit(ctx, writes.Batch{Jobs: []jobs.EnqueueParams{job}})
}

// count runs a SELECT count(*) query.
func count(ctx context.Context, db *store.DB, query string) (int, error) {
	var n int
	if err := db.Bun().NewRaw(query).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("%s: %w", query, err)
	}
	return n, nil
}

const (
	countPending   = "SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable')"
	countCompleted = "SELECT count(*) FROM jobs WHERE state = 'completed'"
	countAll       = "SELECT count(*) FROM jobs"
)

// holdConnections opens n transactions at once and commits them together, so the
// pool holds n open connections before a slice is timed: pgbench, the baseline, leaves
// its connection set-up out of its rate too. The pool must allow n connections; on
// SQLite, where transactions share the one writer connection, it opens that one.
func holdConnections(ctx context.Context, db *store.DB, n int) error {
	if db.Dialect() == store.SQLite {
		n = 1
	}
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	var in atomic.Int64
	all := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.Transact(ctx, func(ctx context.Context, _ *store.Repos) error {
				if in.Add(1) == int64(n) {
					close(all)
				}
				select {
				case <-all:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("open %d connections: %w", n, err)
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// tally counts one goroutine's outcomes; each goroutine has its own, so counting
// takes no lock.
type tally struct {
	ok, failed int
	first      string
}

func (t *tally) add(err error) {
	if err == nil {
		t.ok++
		return
	}
	t.failed++
	if t.first == "" {
		t.first = err.Error()
	}
}

// sample adds up tallies into a Sample over elapsed.
func sample(tallies []tally, elapsed time.Duration) harness.Sample {
	s := harness.Sample{Elapsed: elapsed}
	for _, t := range tallies {
		s.Ops += t.ok
		s.Failed += t.failed
		if s.FirstFailure == "" {
			s.FirstFailure = t.first
		}
	}
	return s
}
