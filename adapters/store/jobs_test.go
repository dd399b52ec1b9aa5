package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

func TestJobLeasesContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Jobs(t, func(t *testing.T) storetest.JobQueue {
				return dbtest.Open(t, dialect).JobQueue()
			})
		})
	}
}

var _ storetest.JobQueue = store.JobQueue{}

// A claim on Postgres is one statement whose text does not depend on its
// filter, so each connection prepares it once and Postgres plans it once:
// claims under every kind of filter run the same text and take what the
// filter allows, each job leased until its kind's lease ends.
func TestPostgresClaimsRunOneStatementText(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, store.Postgres)
	q := db.JobQueue()
	ctx := context.Background()
	now := time.Now()
	// Job i is acc_{i%2}'s, of endpoint ep_{i%3} and pace key pace_{i%2},
	// due in the order of i.
	ids := make([]int64, 8)
	for i := range ids {
		var err error
		ids[i], err = q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "deliver", AccountID: fmt.Sprintf("acc_%d", i%2),
			EndpointKey: fmt.Sprintf("ep_%d", i%3), PaceKey: fmt.Sprintf("pace_%d", i%2), RunAt: now.Add(-time.Duration(10-i) * time.Second)})
		require.NoError(t, err)
	}
	// acc_0 runs one job already, claimed by another replica.
	held, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "deliver", AccountID: "acc_0", RunAt: now.Add(-time.Hour)})
	require.NoError(t, err)
	claimed, err := q.ClaimJobs(ctx, "another replica", []jobs.Lease{{Kind: "deliver", Until: now.Add(time.Hour)}}, 1, now, jobs.ClaimFilter{})
	require.NoError(t, err)
	require.Equal(t, held, claimed[0].ID)
	claims := &capturedQueries{marker: "UPDATE jobs SET state"}
	db.AddQueryHook(claims)
	leases := []jobs.Lease{{Kind: "deliver", Until: now.Add(time.Minute)}, {Kind: "other", Until: now.Add(time.Hour)}}
	for _, c := range []struct {
		filter jobs.ClaimFilter
		want   []int
	}{
		// acc_0 may hold two; counted in the queue with the runners' turns
		// (the claim lock).
		{jobs.ClaimFilter{AccountShare: 1, AccountCeiling: 2, Shared: true, Pool: "jobs"}, []int{0, 1, 3}},
		// ep_1 is stalled, runs one (job 1) and may run two; ep_0 is
		// skipped.
		{jobs.ClaimFilter{EndpointLimit: 2, StalledEndpoints: []string{"ep_1"}, SkipEndpoints: []string{"ep_0"}}, []int{2, 4, 5}},
		// The pool's only runner tells what it runs.
		{jobs.ClaimFilter{SkipPaceKeys: []string{"pace_1"}, AccountShare: 1, AccountCeiling: 4, AccountsRunning: map[string]int{"acc_0": 3}}, []int{6}},
	} {
		claimed, err := q.ClaimJobs(ctx, "w", leases, 10, now, c.filter)
		require.NoError(t, err)
		var got []int64
		for _, j := range claimed {
			got = append(got, j.ID)
			require.Equal(t, now.Add(time.Minute).UnixMicro(), jobLeaseEnd(t, db, j.ID), "job %d is leased for its kind's lease", j.ID)
		}
		var want []int64
		for _, i := range c.want {
			want = append(want, ids[i])
		}
		require.ElementsMatch(t, want, got, "filter %+v", c.filter)
	}
	claims.mu.Lock()
	defer claims.mu.Unlock()
	require.Len(t, claims.seen, 3)
	require.Equal(t, claims.seen[0], claims.seen[1])
	require.Equal(t, claims.seen[0], claims.seen[2])
}

func jobLeaseEnd(t *testing.T, db *store.DB, id int64) int64 {
	t.Helper()
	var until int64
	require.NoError(t, db.Bun().NewRaw("SELECT lease_expires_at FROM jobs WHERE id = ?", id).Scan(context.Background(), &until))
	return until
}

// A replica killed mid-claim holds no one up: its claim's transaction, and
// the claim lock with it, end with its connection, and the others' claims
// go on.
func TestClaimLockDiesWithItsHolder(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, store.Postgres)
	q := db.JobQueue()
	ctx := context.Background()
	now := time.Now()
	id, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", AccountID: "acc_a", RunAt: now})
	require.NoError(t, err)

	holder, err := db.Bun().Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	var pid int
	require.NoError(t, holder.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid))
	_, err = holder.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	// The lock the claims of pool jobs take (claimLockClass, "SWBC").
	_, err = holder.ExecContext(ctx, "SELECT pg_advisory_xact_lock(1398227523, hashtext('jobs'))")
	require.NoError(t, err)

	claimed := make(chan []jobs.Job, 1)
	go func() {
		js, err := q.ClaimJobs(ctx, "replica 2", []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}, 10, now,
			jobs.ClaimFilter{Pool: "jobs", Shared: true})
		assert.NoError(t, err)
		claimed <- js
	}()
	select {
	case <-claimed:
		t.Fatal("the claim did not wait for the lock")
	case <-time.After(200 * time.Millisecond):
	}
	_, err = db.Bun().ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid)
	require.NoError(t, err)
	select {
	case js := <-claimed:
		require.Len(t, js, 1)
		require.Equal(t, id, js[0].ID)
	case <-time.After(10 * time.Second):
		t.Fatal("the claim still waits for a dead holder's lock")
	}
}

// A claim reads only its own kinds' due jobs, an account at a time: with
// 50,000 deliveries of one big account waiting, and the statistics saying
// the queue holds that account alone, a claim of another kind (the cron
// runner's), of one job of the big kind, and of a kind with nothing due
// each touch at most a few hundred buffers (here 103, 64 and 3). Before
// jobs_due_account_kind, the first and the last read every waiting job of
// the big account (1,172 and 1,097 buffers; 7,000 a claim in the dispatch
// bench).
func TestPostgresClaimReadsOnlyItsOwnKinds(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, store.Postgres)
	ctx := context.Background()
	now := time.Now()
	require.NoError(t, db.Exec(ctx, `INSERT INTO jobs (kind, state, payload, max_attempts, pace_key, account_id, endpoint_key, run_at, created_at)
		SELECT 'bulk.deliver', 'available', '\x7b7d'::bytea, 5, 'pace:' || (i % 50), 'acc_big', 'ep:' || (i % 50), ?, ?
		FROM generate_series(1, 50000) i`, now.Add(-time.Minute).UnixMicro(), now.UnixMicro()))
	require.NoError(t, db.Exec(ctx, `INSERT INTO jobs (kind, state, payload, max_attempts, account_id, run_at, created_at)
		SELECT 'cron.like', 'available', '\x7b7d'::bytea, 5, 'acc_small', ?, ? FROM generate_series(1, 5)`,
		now.Add(-time.Second).UnixMicro(), now.UnixMicro()))
	require.NoError(t, db.Exec(ctx, `ANALYZE jobs`))

	for _, c := range []struct {
		kinds []string
		limit int
	}{{[]string{"cron.like"}, 100}, {[]string{"bulk.deliver", "cron.like"}, 1}, {[]string{"other.kind"}, 100}} {
		buffers, err := db.ClaimBuffers(ctx, c.kinds, c.limit, now)
		require.NoError(t, err)
		t.Logf("a claim of %v touched %d buffers", c.kinds, buffers)
		assert.Less(t, buffers, 300, "buffers touched by a claim of %v", c.kinds)
	}
}
