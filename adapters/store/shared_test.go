package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// enqueueBatch is a batch that enqueues one job of kind.
func enqueueBatch(kind string) writes.Batch {
	return writes.Batch{Jobs: []jobs.EnqueueParams{{Kind: kind}}}
}

func countKind(t *testing.T, db *store.DB, kind string) int {
	t.Helper()
	n, err := db.Bun().NewSelect().Table("jobs").Where("kind = ?", kind).Count(context.Background())
	require.NoError(t, err)
	return n
}

// openOneConnection opens a fresh database with one connection for
// writes (SQLite has one anyway) and one leader.
func openOneConnection(t *testing.T, dialect store.Dialect) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.URL(t, dialect), store.Options{SharedLeaders: 1, MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// lineUp commits a first batch while a transaction holds the only
// connection, submits the others while it waits, so that they form one
// batch, and returns each caller's result once all have returned.
func lineUp(t *testing.T, db *store.DB, batches []writes.Batch, ctxs []context.Context, beforeRelease func()) []error {
	t.Helper()
	ctx := context.Background()
	// Idle first: a batch still counted as being written (its caller has
	// its answer, its leader has not yet counted it done) would pass for
	// the first one below.
	require.Eventually(t, func() bool { s := db.SharedStats(); return s.Waiting == 0 && s.Writing == 0 }, 10*time.Second, time.Millisecond, "the committer is idle")
	started, release := make(chan struct{}), make(chan struct{})
	holding := make(chan error, 1)
	go func() {
		holding <- db.Transact(ctx, func(context.Context, *store.Conn) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	first := make(chan error, 1)
	go func() { first <- db.Commit(ctx, enqueueBatch("first")) }()
	require.Eventually(t, func() bool { s := db.SharedStats(); return s.Waiting == 0 && s.Writing == 1 }, 10*time.Second, time.Millisecond, "the first batch is being written")
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() { errs[i] = db.Commit(ctxs[i], b) })
	}
	require.Eventually(t, func() bool { return db.SharedStats().Waiting == len(batches) }, 10*time.Second, time.Millisecond)
	beforeRelease()
	close(release)
	wg.Wait()
	require.NoError(t, <-holding)
	require.NoError(t, <-first)
	return errs
}

func background(n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return ctxs
}

func TestSharedTransactions(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()

			t.Run("ConcurrentBatchesCommitTogether", func(t *testing.T) {
				t.Parallel()
				db := openOneConnection(t, dialect)
				batches := make([]writes.Batch, 20)
				for i := range batches {
					batches[i] = enqueueBatch("together")
				}
				for _, err := range lineUp(t, db, batches, background(20), func() {}) {
					require.NoError(t, err)
				}
				require.Equal(t, 20, countKind(t, db, "together"))
				s := db.SharedStats()
				require.Equal(t, int64(2), s.Batches, "the first batch, then the 20 that waited behind it")
				require.Equal(t, int64(21), s.Units)
				require.Zero(t, s.Redone)
			})

			t.Run("ARefusedBatchLeavesTheOthersCommitted", func(t *testing.T) {
				t.Parallel()
				db := openOneConnection(t, dialect)
				now := time.Now().UTC()
				require.NoError(t, db.AccountStore().InsertAccount(context.Background(), account.Account{ID: "acc_shared", Name: "s", Version: 1, CreatedAt: now, UpdatedAt: now}))
				answer := writes.Answer{AccountID: "acc_shared", Key: "taken", Response: idempotency.Response{Status: 200, Body: []byte("{}")}}
				require.NoError(t, db.Commit(context.Background(), writes.Batch{Answers: []writes.Answer{answer}}))
				batches := make([]writes.Batch, 10)
				for i := range batches {
					batches[i] = enqueueBatch("survivor")
				}
				// Its key was answered already: none of its writes may
				// survive, and the merged batch it spoiled is written
				// again batch by batch.
				batches[4] = enqueueBatch("spoiler")
				batches[4].Answers = []writes.Answer{answer}
				errs := lineUp(t, db, batches, background(10), func() {})
				for i, err := range errs {
					if i == 4 {
						require.ErrorIs(t, err, idempotency.ErrAnsweredElsewhere)
						continue
					}
					require.NoError(t, err, "batch %d", i)
				}
				require.Equal(t, 9, countKind(t, db, "survivor"))
				require.Zero(t, countKind(t, db, "spoiler"))
				require.Equal(t, int64(10), db.SharedStats().Redone)
			})

			t.Run("ACallerGoneWhileWaitingIsLeftOut", func(t *testing.T) {
				t.Parallel()
				db := openOneConnection(t, dialect)
				ctx, cancel := context.WithCancel(context.Background())
				errs := lineUp(t, db, []writes.Batch{enqueueBatch("stays"), enqueueBatch("gone")},
					[]context.Context{context.Background(), ctx}, cancel)
				require.NoError(t, errs[0])
				require.ErrorIs(t, errs[1], context.Canceled)
				require.Zero(t, countKind(t, db, "gone"))
				require.Equal(t, 1, countKind(t, db, "stays"))
			})

			t.Run("ABatchMayNotHoldUniqueJobs", func(t *testing.T) {
				t.Parallel()
				db := openOneConnection(t, dialect)
				err := db.Commit(context.Background(), writes.Batch{Jobs: []jobs.EnqueueParams{{Kind: "k", UniqueKey: "u"}}})
				require.ErrorContains(t, err, "without a unique key")
			})
		})
	}
}

// holdBatch commits a batch that Postgres holds until the returned
// release is called (its answer waits for another transaction's row with
// the same key), and returns once that batch is being written.
func holdBatch(t *testing.T, db *store.DB) (release func()) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := db.Bun().ExecContext(ctx, "INSERT INTO accounts (id, name, version, created_at, updated_at) VALUES ('acc_held', 'held', 1, ?, ?) ON CONFLICT DO NOTHING", now, now)
	require.NoError(t, err)
	tx, err := db.Bun().BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO idempotency_responses (account_id, key, status_code, body, created_at) VALUES ('acc_held', 'held', 200, '', ?)", now)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		b := enqueueBatch("held")
		b.Answers = []writes.Answer{{AccountID: "acc_held", Key: "held", Response: idempotency.Response{Status: 200}}}
		done <- db.Commit(ctx, b)
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := db.Bun().NewRaw("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(ctx, &waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, time.Millisecond, "the held batch waits for the key")
	var once sync.Once
	release = func() {
		once.Do(func() {
			require.NoError(t, tx.Rollback())
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(release)
	return release
}

// submitAll submits n batches of kind at once and returns a channel closed
// when all have returned without error.
func submitAll(t *testing.T, db *store.DB, n int, kind string) <-chan struct{} {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- db.Commit(context.Background(), enqueueBatch(kind)) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.NoError(t, err)
		}
		close(done)
	}()
	return done
}

// TestSharedBatchesOverlapOnlyForAQuorumOrAStall checks when a second
// shared transaction starts beside a running one on Postgres (SQLite runs
// one at a time): small numbers of units wait for the running batch, so
// that batches stay large; a quorum of them starts a batch at once, and so
// does any unit once the running batch has stalled.
func TestSharedBatchesOverlapOnlyForAQuorumOrAStall(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T, quorum int, stall time.Duration) *store.DB {
		db, err := store.Open(context.Background(), dbtest.URL(t, store.Postgres),
			store.Options{SharedLeaders: 2, SharedQuorum: quorum, SharedStall: stall})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}

	t.Run("FewUnitsWaitAndAQuorumStarts", func(t *testing.T) {
		t.Parallel()
		db := open(t, 4, time.Hour)
		release := holdBatch(t, db)
		few := submitAll(t, db, 3, "few")
		require.Eventually(t, func() bool { return db.SharedStats().Waiting == 3 }, 10*time.Second, time.Millisecond)
		// With a leader free, eager batching would take them at once.
		time.Sleep(50 * time.Millisecond)
		require.Equal(t, 3, db.SharedStats().Waiting, "three units under a quorum of four wait for the running batch")
		require.Zero(t, db.SharedStats().Batches)

		more := submitAll(t, db, 1, "few")
		for _, done := range []<-chan struct{}{few, more} {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a quorum of waiting units did not start a batch beside the held one")
			}
		}
		require.Equal(t, 4, countKind(t, db, "few"))
		require.Equal(t, int64(1), db.SharedStats().Batches, "the four shared one batch, the held one still runs")
		release()
		require.Equal(t, 1, countKind(t, db, "held"))
	})

	t.Run("AStalledBatchDoesNotHoldUpOthers", func(t *testing.T) {
		t.Parallel()
		db := open(t, 100, 50*time.Millisecond)
		release := holdBatch(t, db)
		one := submitAll(t, db, 1, "behind")
		select {
		case <-one:
		case <-time.After(10 * time.Second):
			t.Fatal("a unit waited for a stalled batch")
		}
		require.Equal(t, 1, countKind(t, db, "behind"))
		release()
	})
}

// A shared batch whose COMMIT reached Postgres but whose reply was lost
// (the connection reset while the reply was on its way) may have
// committed: its units must not run again one by one, which would do
// their work twice. Each caller learns that the database is unavailable.
func TestSharedBatchWithLostReplyIsNotRedone(t *testing.T) {
	t.Parallel()
	db, proxy, direct := openBehindProxy(t, store.Options{SharedLeaders: 1, MaxConns: 4})
	// Every connection of the pool open before replies are slowed (the
	// batch, and the NOTIFY sent after it, each find one ready), so that
	// the batch is one exchange: its rows and the implicit commit in one
	// multi-statement query.
	var warm sync.WaitGroup
	for range 4 {
		warm.Go(func() {
			_, err := db.Bun().ExecContext(context.Background(), "SELECT pg_sleep(0.2)")
			assert.NoError(t, err)
		})
	}
	warm.Wait()
	observer, err := store.Open(context.Background(), direct, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = observer.Close() })

	const units = 5
	proxy.SetDelay(3 * time.Second) // replies linger in the proxy
	errs := make(chan error, units)
	for range units {
		go func() { errs <- db.Commit(context.Background(), enqueueBatch("lost-reply")) }()
	}
	// The first batch commits while the others wait behind it.
	require.Eventually(t, func() bool { return countKind(t, observer, "lost-reply") > 0 },
		2500*time.Millisecond, 10*time.Millisecond, "the batch did not commit while its reply lingered")
	proxy.Reset()
	proxy.SetDelay(0)

	// The reset also ends the pool's idle connections, so batches after
	// the first may fail too, before committing; each of their callers
	// learns the same.
	lost, acked := 0, 0
	for range units {
		if err := <-errs; err != nil {
			require.True(t, failure.Is(err, failure.KindUnavailable), "got %v", err)
			lost++
		} else {
			acked++
		}
	}
	require.Positive(t, lost, "no caller learnt of the lost reply")
	stored := countKind(t, observer, "lost-reply")
	require.LessOrEqual(t, stored, units, "the units of the batch whose reply was lost ran again")
	require.GreaterOrEqual(t, stored, acked, "an acknowledged unit is missing")
}
