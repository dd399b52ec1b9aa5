package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// openOneLeader opens a fresh database whose shared transactions run one
// batch at a time, so that a test can line units up behind a batch.
func openOneLeader(t *testing.T, dialect store.Dialect) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.URL(t, dialect), store.Options{SharedLeaders: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func enqueueUnit(kind string) func(ctx context.Context, r *store.Repos) error {
	return func(ctx context.Context, r *store.Repos) error {
		_, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: kind})
		return err
	}
}

func countKind(t *testing.T, db *store.DB, kind string) int {
	t.Helper()
	n, err := db.Bun().NewSelect().Table("jobs").Where("kind = ?", kind).Count(context.Background())
	require.NoError(t, err)
	return n
}

// lineUp runs a first unit that holds the only leader until release is
// closed, then submits the others while it waits, so that they form one
// batch; it returns each caller's result once all have returned.
func lineUp(t *testing.T, db *store.DB, units []func(ctx context.Context, r *store.Repos) error) []error {
	t.Helper()
	ctxs := make([]context.Context, len(units))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return lineUpWith(t, db, units, ctxs, func() {})
}

// lineUpWith is lineUp with each unit's context, and beforeRelease called
// once all of them wait.
func lineUpWith(t *testing.T, db *store.DB, units []func(ctx context.Context, r *store.Repos) error, ctxs []context.Context, beforeRelease func()) []error {
	t.Helper()
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var first error
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		first = db.TransactShared(ctx, func(ctx context.Context, r *store.Repos) error {
			once.Do(func() { close(started) })
			<-release
			return enqueueUnit("first")(ctx, r)
		})
	}()
	<-started
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("panicked: %v", p)
				}
			}()
			errs[i] = db.TransactShared(ctxs[i], u)
		})
	}
	require.Eventually(t, func() bool { return db.SharedStats().Waiting == len(units) }, 10*time.Second, time.Millisecond)
	beforeRelease()
	close(release)
	wg.Wait()
	<-firstDone
	require.NoError(t, first)
	return errs
}

func TestSharedTransactions(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()

			t.Run("ConcurrentUnitsCommitTogether", func(t *testing.T) {
				t.Parallel()
				db := openOneLeader(t, dialect)
				units := make([]func(ctx context.Context, r *store.Repos) error, 20)
				for i := range units {
					units[i] = enqueueUnit("together")
				}
				for _, err := range lineUp(t, db, units) {
					require.NoError(t, err)
				}
				require.Equal(t, 20, countKind(t, db, "together"))
				s := db.SharedStats()
				require.Equal(t, int64(2), s.Batches, "the first unit's batch, then the 20 that waited behind it")
				require.Equal(t, int64(21), s.Units)
				require.Zero(t, s.Redone)
			})

			t.Run("AFailedUnitLeavesTheOthersCommitted", func(t *testing.T) {
				t.Parallel()
				db := openOneLeader(t, dialect)
				refused := errors.New("refused by the use case")
				units := make([]func(ctx context.Context, r *store.Repos) error, 10)
				for i := range units {
					units[i] = enqueueUnit("survivor")
				}
				// It writes, then fails: its write must not survive, and
				// the batch it spoiled is redone unit by unit.
				units[4] = func(ctx context.Context, r *store.Repos) error {
					if err := enqueueUnit("spoiler")(ctx, r); err != nil {
						return err
					}
					return refused
				}
				errs := lineUp(t, db, units)
				for i, err := range errs {
					if i == 4 {
						require.ErrorIs(t, err, refused)
						continue
					}
					require.NoError(t, err, "unit %d", i)
				}
				require.Equal(t, 9, countKind(t, db, "survivor"))
				require.Zero(t, countKind(t, db, "spoiler"))
				require.Equal(t, int64(10), db.SharedStats().Redone)
			})

			t.Run("APanicReachesItsOwnCaller", func(t *testing.T) {
				t.Parallel()
				db := openOneLeader(t, dialect)
				units := []func(ctx context.Context, r *store.Repos) error{
					enqueueUnit("calm"),
					func(ctx context.Context, r *store.Repos) error { panic("boom") },
					enqueueUnit("calm"),
				}
				errs := lineUp(t, db, units)
				require.NoError(t, errs[0])
				require.ErrorContains(t, errs[1], "panicked: boom")
				require.NoError(t, errs[2])
				require.Equal(t, 2, countKind(t, db, "calm"))
			})

			t.Run("ACallerGoneWhileWaitingIsLeftOut", func(t *testing.T) {
				t.Parallel()
				db := openOneLeader(t, dialect)
				ctx, cancel := context.WithCancel(context.Background())
				units := []func(ctx context.Context, r *store.Repos) error{
					enqueueUnit("stays"),
					func(ctx context.Context, r *store.Repos) error {
						// Queued behind the first batch, its caller goes
						// away before a leader takes it.
						return enqueueUnit("gone")(ctx, r)
					},
				}
				errs := lineUpWith(t, db, units, []context.Context{context.Background(), ctx}, cancel)
				require.NoError(t, errs[0])
				require.ErrorIs(t, errs[1], context.Canceled)
				require.Zero(t, countKind(t, db, "gone"))
				require.Equal(t, 1, countKind(t, db, "stays"))
			})
		})
	}
}

// holdBatch runs a unit that holds its batch open until the returned
// release is called, and returns once that batch is running.
func holdBatch(t *testing.T, db *store.DB) (release func()) {
	t.Helper()
	started, held, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.TransactShared(context.Background(), func(ctx context.Context, r *store.Repos) error {
			select {
			case <-started:
			default:
				close(started)
			}
			<-held
			return enqueueUnit("held")(ctx, r)
		})
	}()
	<-started
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(held)
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(release)
	return release
}

// submitAll submits n units of kind at once and returns a channel closed
// when all have returned without error.
func submitAll(t *testing.T, db *store.DB, n int, kind string) <-chan struct{} {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- db.TransactShared(context.Background(), enqueueUnit(kind)) })
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
	direct := dbtest.URL(t, store.Postgres)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	proxy := faultproxy.Start(t, u.Host)
	db, err := store.Open(context.Background(), proxy.URL(direct), store.Options{SharedLeaders: 1, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
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
	// And job ids reserved: a block is read from the sequence with the
	// first enqueue.
	require.NoError(t, db.TransactShared(context.Background(), enqueueUnit("warm-up")))
	observer, err := store.Open(context.Background(), direct, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = observer.Close() })

	const units = 5
	proxy.SetDelay(3 * time.Second) // replies linger in the proxy
	errs := make(chan error, units)
	for range units {
		go func() { errs <- db.TransactShared(context.Background(), enqueueUnit("lost-reply")) }()
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
