package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// processBundle is one database that several "processes" (each a DB of
// its own on it, as replicas have) share.
type processBundle struct {
	url string
}

func newProcessBundle(t *testing.T, dialect store.Dialect) processBundle {
	return processBundle{url: dbtest.URL(t, dialect)}
}

// open is one more process's handle on the database.
func (b processBundle) open(t *testing.T, opts store.Options) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), b.url, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// register registers a process on db, closed on cleanup (before db).
func register(t *testing.T, db *store.DB) *store.Process {
	t.Helper()
	p, err := db.RegisterProcess(context.Background(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// waitDead waits until db knows the process dead.
func waitDead(t *testing.T, db *store.DB, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		dead, err := db.DeadProcesses(context.Background())
		require.NoError(t, err)
		for _, d := range dead {
			if d == id {
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "process %s is known dead", id)
}

func hourLease(kind string, now time.Time) []jobs.Lease {
	return []jobs.Lease{{Kind: kind, Until: now.Add(time.Hour)}}
}

// The jobs of a process that died come back at once, long before their
// leases end: due as they were (a replica whose clock runs 2 s fast
// rescues them, one whose clock is right runs them at once), their attempt
// given back, the interruption told to the next run. The jobs of a living
// process, and of a worker that never registered (an older build), wait
// for their leases.
func TestDeadProcessJobsAreRescuedAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		b := newProcessBundle(t, dialect)
		opts := store.Options{ProcessGrace: 300 * time.Millisecond}
		dbA := b.open(t, opts)
		fast := opts
		fast.Now = func() time.Time { return time.Now().Add(2 * time.Second) }
		dbB := b.open(t, fast)
		pa, pb := register(t, dbA), register(t, dbB)
		deaths, _, cancel := pb.Subscribe()
		defer cancel()

		q := dbA.JobQueue()
		now := time.Now()
		due := now.Add(-time.Minute)
		for range 4 {
			_, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", RunAt: due})
			require.NoError(t, err)
		}
		mine, err := q.ClaimJobs(ctx, pa.ID(), hourLease("k", now), 2, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, mine, 2)
		alive, err := q.ClaimJobs(ctx, pb.ID(), hourLease("k", now), 1, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, alive, 1)
		old, err := q.ClaimJobs(ctx, "host-42-old", hourLease("k", now), 1, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, old, 1)

		rescued, killed, err := dbB.JobQueue().RescueDeadWorkers(ctx, fast.Now())
		require.NoError(t, err)
		require.Zero(t, rescued+killed, "every process lives")

		pa.Die()
		select {
		case <-deaths:
		case <-time.After(20 * time.Second):
			t.Fatal("the death was not told")
		}
		rescued, killed, err = dbB.JobQueue().RescueDeadWorkers(ctx, fast.Now())
		require.NoError(t, err)
		require.Equal(t, 2, rescued)
		require.Zero(t, killed)

		again, err := q.ClaimJobs(ctx, "host-43-next", hourLease("k", now), 10, time.Now(), jobs.ClaimFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{mine[0].ID, mine[1].ID}, []int64{again[0].ID, again[1].ID}, "only the dead process's jobs")
		for _, j := range again {
			require.Equal(t, 1, j.Attempt, "the cut-off run used no attempt")
			require.Equal(t, 1, j.Interrupted)
			require.Equal(t, now.UnixMicro(), j.InterruptedAt.UnixMicro(), "when the cut-off run started")
			require.Equal(t, due.UnixMicro(), j.RunAt.UnixMicro(), "due as it was")
		}
		renewed, err := q.RenewLeases(ctx, pb.ID(), []int64{alive[0].ID}, hourLease("k", now))
		require.NoError(t, err)
		require.Equal(t, []int64{alive[0].ID}, renewed, "the living process keeps its job")
		renewed, err = q.RenewLeases(ctx, "host-42-old", []int64{old[0].ID}, hourLease("k", now))
		require.NoError(t, err)
		require.Equal(t, []int64{old[0].ID}, renewed, "an unregistered worker's job waits for its lease")

		// The outcome of the next run is recorded: the interruption
		// was told, and is not told again.
		require.NoError(t, q.RetryJob(ctx, "host-43-next", again[0].ID, due, "boom"))
		next, err := q.ClaimJobs(ctx, "host-43-next", hourLease("k", now), 10, time.Now(), jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, next, 1)
		require.Zero(t, next[0].Interrupted)
		require.True(t, next[0].InterruptedAt.IsZero())
	})
}

// A job whose runs keep dying with their process gets its attempt back
// jobs.MaxInterruptions times in a row; then each interruption counts, and
// a job out of attempts is dead.
func TestInterruptionsInARowCountAtLast(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		b := newProcessBundle(t, dialect)
		opts := store.Options{ProcessGrace: 100 * time.Millisecond}
		db := b.open(t, opts)
		register(t, db)
		q := db.JobQueue()
		id, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", MaxAttempts: 1, UniqueKey: "poison"})
		require.NoError(t, err)
		for run := 1; run <= jobs.MaxInterruptions+2; run++ {
			p := register(t, b.open(t, opts))
			claimed, err := q.ClaimJobs(ctx, p.ID(), hourLease("k", time.Now()), 1, time.Now(), jobs.ClaimFilter{})
			require.NoError(t, err)
			require.Len(t, claimed, 1, "run %d", run)
			require.Equal(t, id, claimed[0].ID)
			require.Equal(t, run-1, claimed[0].Interrupted)
			p.Die()
			waitDead(t, db, p.ID())
			rescued, killed, err := q.RescueDeadWorkers(ctx, time.Now())
			require.NoError(t, err)
			var state string
			var attempt int
			require.NoError(t, db.Bun().NewRaw("SELECT state, attempt FROM jobs WHERE id = ?", id).Scan(ctx, &state, &attempt))
			switch {
			case run <= jobs.MaxInterruptions:
				require.Equal(t, []int{1, 0}, []int{rescued, killed}, "run %d", run)
				require.Equal(t, string(jobs.StateAvailable), state)
				require.Zero(t, attempt, "run %d gave its attempt back", run)
			case run == jobs.MaxInterruptions+1:
				require.Equal(t, []int{1, 0}, []int{rescued, killed})
				require.Equal(t, string(jobs.StateRetryable), state, "the interruption counted")
				require.Equal(t, 1, attempt)
			default:
				require.Equal(t, []int{0, 1}, []int{rescued, killed})
				require.Equal(t, string(jobs.StateDead), state)
			}
		}
		_, err = q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "poison"})
		require.NoError(t, err)
		var pending int
		require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE state = 'available'").Scan(ctx, &pending))
		require.Equal(t, 1, pending, "the dead job let its unique key go")
	})
}

// A restart of Postgres ends every session at once: every lock is free
// and every process lives. No process takes another's work: each takes
// its lock again within the grace period and is told it registered again
// (to check its leases); nobody is found dead.
func TestDatabaseRestartTakesNoLivingProcessWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newProcessBundle(t, store.Postgres)
	dbA, dbB := b.open(t, store.Options{}), b.open(t, store.Options{})
	pa, pb := register(t, dbA), register(t, dbB)
	_, returnedA, cancelA := pa.Subscribe()
	defer cancelA()
	deathsB, returnedB, cancelB := pb.Subscribe()
	defer cancelB()
	q := dbA.JobQueue()
	now := time.Now()
	for range 3 {
		_, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", RunAt: now.Add(-time.Second)})
		require.NoError(t, err)
	}
	mine, err := q.ClaimJobs(ctx, pa.ID(), hourLease("k", now), 3, now, jobs.ClaimFilter{})
	require.NoError(t, err)
	require.Len(t, mine, 3)

	// The sessions holding the processes' locks end, as at a restart, and
	// B looks at once and keeps looking: it sees A's lock free before A
	// notices.
	var ended int
	require.NoError(t, dbA.Bun().NewRaw(`SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = ? AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		store.ProcessLockClass).Scan(ctx, &ended))
	require.Equal(t, 2, ended)
	// For three grace periods nobody is dead, and the work stays.
	deadline := time.Now().Add(3 * store.DefaultProcessGrace)
	for time.Now().Before(deadline) {
		require.NoError(t, pb.Observe(ctx))
		rescued, killed, err := dbB.JobQueue().RescueDeadWorkers(ctx, time.Now())
		require.NoError(t, err)
		require.Zero(t, rescued+killed)
		dead, err := dbB.DeadProcesses(ctx)
		require.NoError(t, err)
		require.Empty(t, dead)
		time.Sleep(5 * time.Millisecond)
	}
	for _, ch := range []<-chan struct{}{returnedA, returnedB} {
		select {
		case <-ch:
		default:
			t.Fatal("a process did not register again")
		}
	}
	select {
	case <-deathsB:
		t.Fatal("a death was told")
	default:
	}
	ids := []int64{mine[0].ID, mine[1].ID, mine[2].ID}
	renewed, err := q.RenewLeases(ctx, pa.ID(), ids, hourLease("k", now))
	require.NoError(t, err)
	require.ElementsMatch(t, ids, renewed)

	// A process that stops cleanly is dead at once: what it left running
	// is taken over without waiting for the grace period.
	require.NoError(t, pa.Close(ctx))
	dead, err := dbB.DeadProcesses(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{pa.ID()}, dead)
}
