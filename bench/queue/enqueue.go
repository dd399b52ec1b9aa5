package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Enqueue measures committed enqueues: Producers goroutines in a closed loop, each
// committing one job per call of db.Commit, as the send use cases enqueue
// (concurrent calls share a database transaction),
// with no runner; the operations of a slice are its committed calls.
//
// The pool is opened at the start of each slice, its connections opened before the
// clock starts, and closed at the end, so it holds no connections while the baseline
// runs: a pool of 64 and 64 pgbench clients would not fit in Postgres's default 100
// connections at once. Jobs accumulate; the table is truncated between slices,
// untimed, once it holds more than TruncateAbove rows.
type Enqueue struct {
	// Producers is the number of concurrent producers.
	Producers int
	// MaxConns bounds the pool; at least Producers.
	MaxConns int
	// TruncateAbove is the table size past which it is emptied between slices.
	TruncateAbove int
}

// Setup creates and migrates the scenario's database and returns the enqueue slice.
func (e Enqueue) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	if e.Producers < 1 || e.MaxConns < e.Producers {
		return nil, fmt.Errorf("want Producers ≥ 1 and MaxConns ≥ Producers, have %d and %d", e.Producers, e.MaxConns)
	}
	url, err := newDatabase(ctx, env)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d time.Duration) (harness.Sample, error) {
		return e.slice(ctx, url, d)
	}, nil
}

func (e Enqueue) slice(ctx context.Context, url string, d time.Duration) (harness.Sample, error) {
	db, err := store.Open(ctx, url, store.Options{MaxConns: e.MaxConns})
	if err != nil {
		return harness.Sample{}, err
	}
	defer db.Close()
	if err := holdConnections(ctx, db, e.Producers); err != nil {
		return harness.Sample{}, err
	}
	tallies := make([]tally, e.Producers)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range tallies {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				err := enqueueShared(ctx, db)
				if ctx.Err() == nil {
					tallies[i].add(err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return harness.Sample{}, err
	}
	rows, err := count(ctx, db, countAll)
	if err != nil {
		return harness.Sample{}, err
	}
	if rows > e.TruncateAbove {
		empty := "TRUNCATE jobs"
		if db.Dialect() == store.SQLite {
			empty = "DELETE FROM jobs"
		}
		if _, err := db.Bun().ExecContext(ctx, empty); err != nil {
			return harness.Sample{}, fmt.Errorf("empty the jobs table: %w", err)
		}
	}
	return sample(tallies, elapsed), nil
}
