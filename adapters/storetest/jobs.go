package storetest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// JobQueue is the part of the job queue whose leases the contract checks:
// what a runner (adapters/jobs) claims, renews, completes and rescues with.
type JobQueue interface {
	EnqueueJob(ctx context.Context, p jobs.EnqueueParams) (int64, error)
	ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, filter jobs.ClaimFilter) ([]jobs.Job, error)
	RenewLeases(ctx context.Context, worker string, ids []int64, leases []jobs.Lease) ([]int64, error)
	ReleaseJobs(ctx context.Context, worker string, ids []int64) error
	CompleteJobs(ctx context.Context, worker string, ids []int64, now time.Time) error
	RescueJobs(ctx context.Context, now time.Time) (rescued, killed int, err error)
	// NextJobAt is what an idle runner sleeps until.
	NextJobAt(ctx context.Context, kinds []string) (time.Time, error)
	RetryJob(ctx context.Context, worker string, id int64, runAt time.Time, lastErr string) error
	KillJob(ctx context.Context, worker string, id int64, now time.Time, lastErr string) error
	// AccountJobStats is the account's summary the console shows
	// (application/queue).
	AccountJobStats(ctx context.Context, accountID string, now time.Time) ([]jobs.Stat, error)
	// The state the runners share: who runs, and each endpoint's breaker.
	HeartbeatRunner(ctx context.Context, worker, pool string, workers int) (jobs.RunnerPool, error)
	RemoveRunner(ctx context.Context, worker, pool string) error
	Breakers(ctx context.Context) ([]jobs.Breaker, error)
	TakeProbe(ctx context.Context, worker, endpoint string, job int64) (bool, error)
	RecordEndpoint(ctx context.Context, e jobs.EndpointEvent, p jobs.BreakerPolicy) error
}

// Jobs runs the lease contract of the job queue against the queue that open
// returns; open must give each call its own empty, migrated database.
func Jobs(t *testing.T, open func(t *testing.T) JobQueue) {
	enqueue := func(t *testing.T, q JobQueue, kind string) int64 {
		t.Helper()
		id, err := q.EnqueueJob(context.Background(), jobs.EnqueueParams{Kind: kind, RunAt: at})
		require.NoError(t, err)
		return id
	}
	// policy opens a breaker after three failures, for an hour.
	policy := jobs.BreakerPolicy{Failures: 3, Open: time.Hour, MaxOpen: 4 * time.Hour}
	ids := func(js []jobs.Job) []int64 {
		out := make([]int64, len(js))
		for i, j := range js {
			out[i] = j.ID
		}
		return out
	}

	// Workers claiming at once never share a job, and together they
	// claim every job.
	// The next job time is the earliest run time of the kinds' pending
	// jobs, due or not; running jobs and other kinds do not count.
	t.Run("NextJobAtIsTheKindsEarliestPendingJob", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		next := func(kinds ...string) time.Time {
			t.Helper()
			got, err := q.NextJobAt(ctx, kinds)
			require.NoError(t, err)
			return got
		}
		require.True(t, next("send", "mail").IsZero(), "nothing pending")
		for kind, runAt := range map[string]time.Time{"run": at.Add(-time.Hour), "send": at.Add(10 * time.Second), "mail": at.Add(5 * time.Second), "other": at} {
			_, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: kind, RunAt: runAt})
			require.NoError(t, err)
		}
		_, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "send", RunAt: at.Add(time.Hour)})
		require.NoError(t, err)
		claimed, err := q.ClaimJobs(ctx, "w", []jobs.Lease{{Kind: "run", Until: at.Add(time.Minute)}}, 1, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, at.Add(5*time.Second), next("send", "mail", "run"))
		require.Equal(t, at.Add(10*time.Second), next("send"))
		require.True(t, next("run").IsZero(), "a running job is not pending")
		require.True(t, next("nothing").IsZero(), "a kind without jobs")
		require.True(t, next().IsZero(), "no kinds")
	})

	// An account's summary counts its own jobs only, each in its one
	// state: due, scheduled, running, retrying (and due or scheduled),
	// dead; completed jobs are gone from it.
	t.Run("AccountJobStats", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		add := func(account, kind string, runAt time.Time) int64 {
			t.Helper()
			id, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: kind, RunAt: runAt, AccountID: account})
			require.NoError(t, err)
			return id
		}
		for range 3 {
			add("acc_a", "send", at)
		}
		add("acc_a", "send", at.Add(time.Hour))
		add("acc_a", "mail", at.Add(-time.Minute))
		add("acc_b", "send", at)
		lease := []jobs.Lease{{Kind: "mail", Until: at.Add(time.Minute)}}
		claimed, err := q.ClaimJobs(ctx, "w", lease, 1, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		stats, err := q.AccountJobStats(ctx, "acc_a", at)
		require.NoError(t, err)
		require.Equal(t, []jobs.Stat{
			{Kind: "mail", Running: 1},
			{Kind: "send", Ready: 3, Scheduled: 1, OldestReady: at},
		}, stats)

		// The running mail job fails once (retrying, due in a minute),
		// then claims of send: one is killed, one completed.
		require.NoError(t, q.RetryJob(ctx, "w", claimed[0].ID, at.Add(time.Minute), "boom"))
		sendLease := []jobs.Lease{{Kind: "send", Until: at.Add(time.Minute)}}
		sends, err := q.ClaimJobs(ctx, "w", sendLease, 2, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		var mine []jobs.Job
		for _, j := range sends {
			if j.AccountID == "acc_a" {
				mine = append(mine, j)
			}
		}
		require.NotEmpty(t, mine)
		require.NoError(t, q.KillJob(ctx, "w", mine[0].ID, at, "gone"))
		stats, err = q.AccountJobStats(ctx, "acc_a", at)
		require.NoError(t, err)
		var mail, send jobs.Stat
		for _, s := range stats {
			switch s.Kind {
			case "mail":
				mail = s
			case "send":
				send = s
			}
		}
		require.Equal(t, jobs.Stat{Kind: "mail", Scheduled: 1, Retrying: 1}, mail)
		require.Equal(t, 1, send.Dead)
		require.Equal(t, 1, send.Scheduled)
		require.Equal(t, 3, send.Ready+send.Running+send.Dead, "the three due sends, one dead")

		none, err := q.AccountJobStats(ctx, "acc_c", at)
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("ConcurrentClaimsAreDisjoint", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		const total, workers = 120, 4
		for range total {
			enqueue(t, q, "k")
		}
		lease := []jobs.Lease{{Kind: "k", Until: at.Add(time.Minute)}}
		var (
			mu    sync.Mutex
			owner = map[int64]string{}
			wg    sync.WaitGroup
			errs  []error
		)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker := fmt.Sprint("w", w)
				for {
					claimed, err := q.ClaimJobs(ctx, worker, lease, 7, at, jobs.ClaimFilter{})
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					if len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, j := range claimed {
						if other, taken := owner[j.ID]; taken {
							errs = append(errs, fmt.Errorf("job %d claimed by %s and %s", j.ID, other, worker))
						}
						owner[j.ID] = worker
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Len(t, owner, total, "every job claimed once")
	})

	t.Run("ClaimLeasesEachKindForItsOwnLease", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		short, long := enqueue(t, q, "short"), enqueue(t, q, "long")
		leases := []jobs.Lease{{Kind: "long", Until: at.Add(5 * time.Minute)}, {Kind: "short", Until: at.Add(10 * time.Second)}}
		claimed, err := q.ClaimJobs(ctx, "w1", leases, 10, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{short, long}, ids(claimed))

		rescued, killed, err := q.RescueJobs(ctx, at.Add(10*time.Second))
		require.NoError(t, err)
		require.Zero(t, rescued+killed, "a lease holds until its end")
		rescued, _, err = q.RescueJobs(ctx, at.Add(11*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, rescued, "the short kind's lease ended; the long kind's did not")
		again, err := q.ClaimJobs(ctx, "w2", leases, 10, at.Add(11*time.Second), jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, short, again[0].ID)
		require.Equal(t, 2, again[0].Attempt, "the lost attempt counts")
		require.NoError(t, q.CompleteJobs(ctx, "w2", []int64{short}, at.Add(12*time.Second)))

		rescued, _, err = q.RescueJobs(ctx, at.Add(5*time.Minute-time.Second))
		require.NoError(t, err)
		require.Zero(t, rescued, "the long kind holds for its own lease")
		rescued, _, err = q.RescueJobs(ctx, at.Add(5*time.Minute+time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, rescued)
	})

	// Completing a batch completes the jobs the worker holds and leaves
	// the others' alone.
	t.Run("CompleteJobsCompletesOnlyTheWorkersLeases", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		lease := []jobs.Lease{{Kind: "k", Until: at.Add(time.Minute)}}
		mine1, mine2, theirs := enqueue(t, q, "k"), enqueue(t, q, "k"), enqueue(t, q, "k")
		claimed, err := q.ClaimJobs(ctx, "w1", lease, 2, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{mine1, mine2}, ids(claimed))
		claimed, err = q.ClaimJobs(ctx, "w2", lease, 2, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Equal(t, []int64{theirs}, ids(claimed))

		require.NoError(t, q.CompleteJobs(ctx, "w1", []int64{mine1, theirs, mine2, 1 << 40}, at.Add(time.Second)))
		renewed, err := q.RenewLeases(ctx, "w1", []int64{mine1, mine2}, lease)
		require.NoError(t, err)
		require.Empty(t, renewed, "both of the worker's jobs are completed")
		renewed, err = q.RenewLeases(ctx, "w2", []int64{theirs}, lease)
		require.NoError(t, err)
		require.Equal(t, []int64{theirs}, renewed, "another worker's job still runs")
		rescued, killed, err := q.RescueJobs(ctx, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, rescued+killed, "only the other worker's job had a lease left")
	})

	t.Run("RenewExtendsTheLeasesTheWorkerHolds", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		mine1, mine2, theirs := enqueue(t, q, "k"), enqueue(t, q, "k"), enqueue(t, q, "k")
		lease := func(until time.Time) []jobs.Lease { return []jobs.Lease{{Kind: "k", Until: until}} }
		claimed, err := q.ClaimJobs(ctx, "w1", lease(at.Add(10*time.Second)), 2, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{mine1, mine2}, ids(claimed))
		claimed, err = q.ClaimJobs(ctx, "w2", lease(at.Add(10*time.Second)), 2, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Equal(t, []int64{theirs}, ids(claimed))

		renewed, err := q.RenewLeases(ctx, "w1", []int64{mine1, mine2, theirs}, lease(at.Add(30*time.Second)))
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{mine1, mine2}, renewed, "another worker's lease is not renewed")
		require.NoError(t, q.CompleteJobs(ctx, "w1", []int64{mine2}, at.Add(time.Second)))
		renewed, err = q.RenewLeases(ctx, "w1", []int64{mine1, mine2}, lease(at.Add(30*time.Second)))
		require.NoError(t, err)
		require.Equal(t, []int64{mine1}, renewed, "a finished job has no lease to renew")

		rescued, _, err := q.RescueJobs(ctx, at.Add(20*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, rescued, "only the unrenewed lease ended")
		renewed, err = q.RenewLeases(ctx, "w2", []int64{theirs}, lease(at.Add(40*time.Second)))
		require.NoError(t, err)
		require.Empty(t, renewed, "a rescued job's lease is lost to its worker")

		rescued, _, err = q.RescueJobs(ctx, at.Add(31*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, rescued, "the renewed lease ends where the renewal said")
	})

	t.Run("RenewUsesEachKindsLease", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		short, long := enqueue(t, q, "short"), enqueue(t, q, "long")
		first := []jobs.Lease{{Kind: "short", Until: at.Add(10 * time.Second)}, {Kind: "long", Until: at.Add(10 * time.Second)}}
		_, err := q.ClaimJobs(ctx, "w", first, 10, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		renewed, err := q.RenewLeases(ctx, "w", []int64{short, long},
			[]jobs.Lease{{Kind: "short", Until: at.Add(15 * time.Second)}, {Kind: "long", Until: at.Add(time.Minute)}})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{short, long}, renewed)
		rescued, _, err := q.RescueJobs(ctx, at.Add(16*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, rescued)
		renewed, err = q.RenewLeases(ctx, "w", []int64{short, long}, first)
		require.NoError(t, err)
		require.Equal(t, []int64{long}, renewed, "the short job was rescued, the long one still held")
	})

	// A heartbeat racing a rescue: each job is either renewed and kept, or
	// rescued and lost to its worker, never both and never neither.
	t.Run("RenewRacingRescue", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		const n = 200
		for range n {
			enqueue(t, q, "k")
		}
		claimed, err := q.ClaimJobs(ctx, "w", []jobs.Lease{{Kind: "k", Until: at.Add(time.Second)}}, n, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, n)
		var (
			wg                  sync.WaitGroup
			renewed             []int64
			rescued             int
			renewErr, rescueErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			renewed, renewErr = q.RenewLeases(ctx, "w", ids(claimed), []jobs.Lease{{Kind: "k", Until: at.Add(time.Hour)}})
		}()
		go func() {
			defer wg.Done()
			rescued, _, rescueErr = q.RescueJobs(ctx, at.Add(2*time.Second))
		}()
		wg.Wait()
		require.NoError(t, renewErr)
		require.NoError(t, rescueErr)
		require.Equal(t, n, len(renewed)+rescued, "renewed %d, rescued %d", len(renewed), rescued)
		again, err := q.ClaimJobs(ctx, "w2", []jobs.Lease{{Kind: "k", Until: at.Add(time.Hour)}}, n, at.Add(2*time.Second), jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, again, rescued, "what was rescued is claimable; what was renewed is not")
		for _, j := range again {
			require.NotContains(t, renewed, j.ID, "a renewed job is not rescued")
		}
	})

	claimFair := func(t *testing.T, q JobQueue, limit int, f jobs.ClaimFilter) []jobs.Job {
		t.Helper()
		// The jobs are due by then.
		now := at.Add(time.Minute)
		claimed, err := q.ClaimJobs(context.Background(), "w", []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}, limit, now, f)
		require.NoError(t, err)
		return claimed
	}
	enqueueFor := func(t *testing.T, q JobQueue, account, endpoint, pace string, runAt time.Time) int64 {
		t.Helper()
		id, err := q.EnqueueJob(context.Background(), jobs.EnqueueParams{
			Kind: "k", RunAt: runAt, AccountID: account, EndpointKey: endpoint, PaceKey: pace,
		})
		require.NoError(t, err)
		return id
	}

	t.Run("ClaimCarriesAccountAndEndpoint", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		id := enqueueFor(t, q, "acc_a", "webhook:acc_a", "", at)
		claimed := claimFair(t, q, 10, jobs.ClaimFilter{})
		require.Len(t, claimed, 1)
		require.Equal(t, id, claimed[0].ID)
		require.Equal(t, "acc_a", claimed[0].AccountID)
		require.Equal(t, "webhook:acc_a", claimed[0].EndpointKey)
	})

	// hold makes n jobs of account (and endpoint) running, claimed by
	// worker: call it before enqueueing the jobs a test claims.
	hold := func(t *testing.T, q JobQueue, worker, account, endpoint string, n int) []int64 {
		t.Helper()
		for i := range n {
			enqueueFor(t, q, account, endpoint, "", at.Add(-time.Hour+time.Duration(i)*time.Millisecond))
		}
		now := at.Add(time.Minute)
		claimed, err := q.ClaimJobs(context.Background(), worker, []jobs.Lease{{Kind: "k", Until: now.Add(time.Hour)}}, n, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, n)
		return ids(claimed)
	}

	t.Run("ClaimLeavesOutSkippedKeys", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		hold(t, q, "w", "acc_full", "", 2)
		hold(t, q, "other worker", "acc_c", "", 1)
		full := enqueueFor(t, q, "acc_full", "", "", at)
		own := enqueueFor(t, q, "acc_b", "own", "", at.Add(time.Second))
		paced := enqueueFor(t, q, "", "", "thread-2", at.Add(2*time.Second))
		c := enqueueFor(t, q, "acc_c", "shared", "", at.Add(3*time.Second))
		none := enqueueFor(t, q, "", "", "", at.Add(4*time.Second))

		claimed := claimFair(t, q, 10, jobs.ClaimFilter{
			AccountShare: 1, AccountCeiling: 2, Shared: true,
			SkipEndpoints: []string{"own"},
			SkipPaceKeys:  []string{"thread-2"},
		})
		require.Equal(t, []int64{c, none}, ids(claimed),
			"acc_full runs its ceiling, endpoint own and thread-2 are skipped; acc_c borrows")
		claimed = claimFair(t, q, 10, jobs.ClaimFilter{})
		require.ElementsMatch(t, []int64{full, own, paced}, ids(claimed), "left out, not lost")
	})

	// Each account gets its share before any borrows, in turns: one
	// account's older backlog does not take the claim from the others. The
	// running jobs count alike whether the claim counts them in the queue
	// (Shared) or is told them by the pool's only runner.
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("ClaimSharesAcrossAccountsInTurns/shared=%v", shared), func(t *testing.T) {
			t.Parallel()
			q := open(t)
			var a []int64
			for i := range 6 {
				a = append(a, enqueueFor(t, q, "acc_a", "", "", at.Add(time.Duration(i)*time.Millisecond)))
			}
			b := enqueueFor(t, q, "acc_b", "", "", at.Add(time.Second))
			c1 := enqueueFor(t, q, "acc_c", "", "", at.Add(2*time.Second))
			c2 := enqueueFor(t, q, "acc_c", "", "", at.Add(3*time.Second))
			running := map[string]int{}
			claim := func(limit int) []int64 {
				t.Helper()
				f := jobs.ClaimFilter{AccountShare: 2, AccountCeiling: 5, Shared: shared}
				if !shared {
					f.AccountsRunning = maps.Clone(running)
				}
				claimed := claimFair(t, q, limit, f)
				for _, j := range claimed {
					running[j.AccountID]++
				}
				return ids(claimed)
			}

			require.ElementsMatch(t, []int64{a[0], b, c1, a[1]}, claim(4),
				"each account's oldest, then the second oldest of each, oldest first")
			require.ElementsMatch(t, []int64{c2, a[2], a[3], a[4]}, claim(10),
				"C's second is within its share; A borrows up to its ceiling of 5")
			require.Empty(t, claim(10), "A runs its ceiling")
		})
	}

	// The running jobs an account's bounds count in the queue (Shared) are
	// every worker's: what other replicas run takes from its share and
	// ceiling. Those of other kinds (another pool's) count nothing.
	t.Run("ClaimCountsEveryWorkersRunningJobs", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		hold(t, q, "replica 1", "acc_a", "", 2)
		hold(t, q, "replica 2", "acc_a", "", 1)
		other, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "other", RunAt: at, AccountID: "acc_a"})
		require.NoError(t, err)
		mine, err := q.ClaimJobs(ctx, "replica 2", []jobs.Lease{{Kind: "other", Until: at.Add(time.Hour)}}, 1, at, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Equal(t, []int64{other}, ids(mine))
		var a []int64
		for i := range 3 {
			a = append(a, enqueueFor(t, q, "acc_a", "", "", at.Add(time.Duration(i)*time.Millisecond)))
		}
		claimed := claimFair(t, q, 10, jobs.ClaimFilter{AccountShare: 4, AccountCeiling: 4, Shared: true})
		require.Equal(t, a[:1], ids(claimed), "three of A's jobs run elsewhere (the other kind's not counted): room for one")
		claimed = claimFair(t, q, 10, jobs.ClaimFilter{AccountShare: 4, AccountCeiling: 4, AccountsRunning: map[string]int{"acc_a": 1}})
		require.Equal(t, a[1:], ids(claimed), "the pool's only runner counts its own (one), not the queue's")
	})

	// A stalled endpoint (the claimer's own finding, or marked by another
	// runner) gets no more than its limit less its running jobs, wherever
	// they run; the others are unbounded.
	t.Run("ClaimBoundsStalledEndpoints", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		hold(t, q, "another replica", "acc_a", "e1", 1)
		var e1, e2, e3 []int64
		for i := range 10 {
			e1 = append(e1, enqueueFor(t, q, "acc_a", "e1", "", at.Add(time.Duration(i)*time.Millisecond)))
		}
		for i := range 3 {
			e2 = append(e2, enqueueFor(t, q, "acc_a", "e2", "", at.Add(time.Second+time.Duration(i)*time.Millisecond)))
		}
		for i := range 3 {
			e3 = append(e3, enqueueFor(t, q, "acc_b", "e3", "", at.Add(time.Second+time.Duration(i)*time.Millisecond)))
		}
		other := enqueueFor(t, q, "acc_a", "", "", at.Add(2*time.Second))
		require.NoError(t, q.RecordEndpoint(ctx, jobs.EndpointEvent{EndpointKey: "e2", Outcome: jobs.EndpointStalled}, policy))
		bounds := jobs.ClaimFilter{EndpointLimit: 3, StalledEndpoints: []string{"e1"}}
		claimed := claimFair(t, q, 20, bounds)
		require.ElementsMatch(t, append([]int64{e1[0], e1[1], e2[0], e2[1], e2[2], other}, e3...), ids(claimed),
			"e1 runs one elsewhere: two more; e2, marked by another replica, three; e3 unbounded")
		claimed = claimFair(t, q, 20, jobs.ClaimFilter{})
		require.ElementsMatch(t, e1[2:], ids(claimed), "without a limit, unbounded")

		require.NoError(t, q.RecordEndpoint(ctx, jobs.EndpointEvent{EndpointKey: "e2", Outcome: jobs.EndpointAnswered}, policy))
		breakers, err := q.Breakers(ctx)
		require.NoError(t, err)
		require.Empty(t, breakers, "an answer clears the mark, and a row with nothing to say goes")
	})
	breakerOf := func(t *testing.T, q JobQueue, endpoint string) (jobs.Breaker, bool) {
		t.Helper()
		breakers, err := q.Breakers(context.Background())
		require.NoError(t, err)
		for _, b := range breakers {
			if b.EndpointKey == endpoint {
				return b, true
			}
		}
		return jobs.Breaker{}, false
	}
	record := func(t *testing.T, q JobQueue, endpoint string, outcome jobs.EndpointOutcome, probe int64, p jobs.BreakerPolicy) {
		t.Helper()
		require.NoError(t, q.RecordEndpoint(context.Background(), jobs.EndpointEvent{EndpointKey: endpoint, Outcome: outcome, Probe: probe}, p))
	}

	// Failures, whichever runners saw them, open the endpoint's breaker for
	// every claimer; only consecutive ones count; a failure while it is open
	// (of an attempt that started before) counts nothing.
	t.Run("BreakerOpensForEveryClaimer", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		e := enqueueFor(t, q, "acc_a", "down", "", at)
		fine := enqueueFor(t, q, "acc_a", "fine", "", at.Add(time.Second))
		record(t, q, "down", jobs.EndpointFailed, 0, policy)
		record(t, q, "down", jobs.EndpointFailed, 0, policy)
		record(t, q, "down", jobs.EndpointSucceeded, 0, policy)
		_, found := breakerOf(t, q, "down")
		require.False(t, found, "a success closes the breaker and forgets its failures")
		for range 4 {
			record(t, q, "down", jobs.EndpointFailed, 0, policy)
		}
		b, found := breakerOf(t, q, "down")
		require.True(t, found)
		require.True(t, b.Open, "three failures in a row, whoever saw them, open it")
		require.Equal(t, 3, b.Failures, "the failure while open counts nothing")
		require.InDelta(t, policy.Open.Seconds(), b.OpenFor.Seconds(), 5, "open for the policy's time, on the database clock")
		require.False(t, b.Probing)
		taken, err := q.TakeProbe(context.Background(), "replica 2", "down", e)
		require.NoError(t, err)
		require.False(t, taken, "no probe before its time")

		claimed := claimFair(t, q, 10, jobs.ClaimFilter{})
		require.Equal(t, []int64{fine}, ids(claimed), "the open endpoint's job stays in the queue")
		record(t, q, "down", jobs.EndpointSucceeded, 0, policy)
		claimed = claimFair(t, q, 10, jobs.ClaimFilter{})
		require.Equal(t, []int64{e}, ids(claimed), "an attempt that succeeds anyway closes it")
	})

	// A half-open breaker lets one probe through, whoever claims: claimers
	// that find it half-open take one job of it each, and the first to make
	// its job the probe runs it; the others put theirs back. The probe's
	// failure opens the breaker again, its answer closes it.
	t.Run("BreakerProbesOnceAcrossClaimers", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		var down []int64
		for i := range 3 {
			down = append(down, enqueueFor(t, q, "acc_a", "down", "", at.Add(time.Duration(i)*time.Millisecond)))
		}
		brief := jobs.BreakerPolicy{Failures: 1, Open: time.Millisecond, MaxOpen: time.Hour}
		record(t, q, "down", jobs.EndpointFailed, 0, brief)
		require.Empty(t, claimFair(t, q, 10, jobs.ClaimFilter{}), "open: nothing of it is claimed")
		require.Eventually(t, func() bool { b, _ := breakerOf(t, q, "down"); return b.OpenFor <= 0 }, time.Second, time.Millisecond)
		b, _ := breakerOf(t, q, "down")
		require.True(t, b.Open, "half-open is open, its time passed")
		require.Empty(t, claimFair(t, q, 10, jobs.ClaimFilter{}), "half-open: only a claimer that probes claims")

		now := at.Add(time.Minute)
		lease := []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}
		probe, err := q.ClaimJobs(ctx, "replica 2", lease, 10, now, jobs.ClaimFilter{Probes: []string{"down"}})
		require.NoError(t, err)
		require.Equal(t, down[:1], ids(probe), "one job to probe with")
		late, err := q.ClaimJobs(ctx, "replica 3", lease, 10, now, jobs.ClaimFilter{Probes: []string{"down"}})
		require.NoError(t, err)
		require.Empty(t, late, "one of its jobs runs: no room for another probe")
		taken, err := q.TakeProbe(ctx, "replica 2", "down", probe[0].ID)
		require.NoError(t, err)
		require.True(t, taken)
		taken, err = q.TakeProbe(ctx, "replica 3", "down", down[1])
		require.NoError(t, err)
		require.False(t, taken, "one probe across the claimers")
		b, _ = breakerOf(t, q, "down")
		require.True(t, b.Probing)

		record(t, q, "down", jobs.EndpointFailed, probe[0].ID, brief)
		b, _ = breakerOf(t, q, "down")
		require.True(t, b.Open)
		require.False(t, b.Probing)
		record(t, q, "down", jobs.EndpointFailed, 0, jobs.BreakerPolicy{Failures: 1, Open: time.Hour, MaxOpen: time.Hour})
		b, _ = breakerOf(t, q, "down")
		require.Less(t, b.OpenFor, time.Minute, "a failure while open does not reopen it for longer")
	})

	// A probe whose job ends without an outcome (its process died and the
	// job went back to the queue) leaves the breaker half-open, for any
	// claimer to probe; a probe's answer closes it.
	t.Run("BreakerProbeOfALostJobIsTakenAgain", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		job := enqueueFor(t, q, "acc_a", "down", "", at)
		brief := jobs.BreakerPolicy{Failures: 1, Open: time.Millisecond, MaxOpen: time.Hour}
		record(t, q, "down", jobs.EndpointFailed, 0, brief)
		require.Eventually(t, func() bool { b, _ := breakerOf(t, q, "down"); return b.OpenFor <= 0 }, time.Second, time.Millisecond)
		now := at.Add(time.Minute)
		lease := []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}
		probe, err := q.ClaimJobs(ctx, "replica 1", lease, 10, now, jobs.ClaimFilter{Probes: []string{"down"}})
		require.NoError(t, err)
		require.Equal(t, []int64{job}, ids(probe))
		taken, err := q.TakeProbe(ctx, "replica 1", "down", job)
		require.NoError(t, err)
		require.True(t, taken)
		require.NoError(t, q.ReleaseJobs(ctx, "replica 1", []int64{job}))
		b, _ := breakerOf(t, q, "down")
		require.False(t, b.Probing, "its job is back in the queue: the breaker is half-open")

		probe, err = q.ClaimJobs(ctx, "replica 2", lease, 10, now, jobs.ClaimFilter{Probes: []string{"down"}})
		require.NoError(t, err)
		require.Equal(t, []int64{job}, ids(probe))
		taken, err = q.TakeProbe(ctx, "replica 2", "down", job)
		require.NoError(t, err)
		require.True(t, taken, "another claimer probes")
		record(t, q, "down", jobs.EndpointAnswered, 0, brief)
		_, found := breakerOf(t, q, "down")
		require.True(t, found, "an answer to another attempt than the probe leaves the breaker")
		record(t, q, "down", jobs.EndpointAnswered, job, brief)
		_, found = breakerOf(t, q, "down")
		require.False(t, found, "the probe's answer closes it")
	})

	// The runners of a pool that beat recently are its workers; a
	// removed one counts no more.
	t.Run("RunnersOfAPool", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		p, err := q.HeartbeatRunner(ctx, "replica 1", "jobs", 16)
		require.NoError(t, err)
		require.Equal(t, jobs.RunnerPool{Runners: 1, Workers: 16}, p)
		_, err = q.HeartbeatRunner(ctx, "replica 1", "cron", 2000)
		require.NoError(t, err)
		p, err = q.HeartbeatRunner(ctx, "replica 2", "jobs", 8)
		require.NoError(t, err)
		require.Equal(t, jobs.RunnerPool{Runners: 2, Workers: 24}, p, "the cron pool apart")
		require.NoError(t, q.RemoveRunner(ctx, "replica 1", "jobs"))
		p, err = q.HeartbeatRunner(ctx, "replica 2", "jobs", 8)
		require.NoError(t, err)
		require.Equal(t, jobs.RunnerPool{Runners: 1, Workers: 8}, p)
	})

	// With more accounts holding due jobs than a claim visits, claims go
	// round: the next claim resumes after the last account visited, so
	// every account has its turn however many there are.
	t.Run("ClaimsGoRoundTheAccounts", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		_, err := q.HeartbeatRunner(ctx, "w", "jobs", 1)
		require.NoError(t, err)
		// A claim of 16 visits 16 accounts. The first 16 have backlogs,
		// older than the last four's jobs.
		var late []int64
		for i := range 20 {
			a := fmt.Sprintf("acc_%02d", i)
			if i < 16 {
				for j := range 3 {
					enqueueFor(t, q, a, "", "", at.Add(time.Duration(j*100+i)*time.Millisecond))
				}
				continue
			}
			late = append(late, enqueueFor(t, q, a, "", "", at.Add(time.Second+time.Duration(i)*time.Millisecond)))
		}
		claimed := claimFair(t, q, 16, jobs.ClaimFilter{Pool: "jobs"})
		require.Len(t, claimed, 16)
		for _, j := range claimed {
			require.NotContains(t, late, j.ID, "the first claim visits the first 16 accounts")
		}
		claimed = claimFair(t, q, 16, jobs.ClaimFilter{Pool: "jobs"})
		require.Len(t, claimed, 16)
		require.Subset(t, ids(claimed), late, "the next claim resumes after them: the last four have their turn")
	})

	// Claims that take turns (Shared) never fill one account's room twice,
	// however many claim at once.
	t.Run("SharedClaimsHoldTheCeilingTogether", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		ctx := context.Background()
		for i := range 100 {
			enqueueFor(t, q, "acc_a", "", "", at.Add(time.Duration(i)*time.Millisecond))
		}
		now := at.Add(time.Minute)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total int
			errs  []error
		)
		for w := range 8 {
			wg.Go(func() {
				claimed, err := q.ClaimJobs(ctx, fmt.Sprint("replica ", w), []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}, 5, now,
					jobs.ClaimFilter{Pool: "jobs", AccountShare: 10, AccountCeiling: 10, Shared: true})
				mu.Lock()
				defer mu.Unlock()
				total += len(claimed)
				if err != nil {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Equal(t, 10, total, "eight claims of five at once fill the ceiling of ten, no more")
	})

	// Released jobs are back in the queue as they were: their place, their
	// attempts; only the releasing worker's leases are released.
	t.Run("ReleaseReturnsJobsAsTheyWere", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		first := enqueueFor(t, q, "acc_a", "", "", at)
		second := enqueueFor(t, q, "acc_a", "", "", at.Add(time.Second))
		claimed := claimFair(t, q, 10, jobs.ClaimFilter{})
		require.Len(t, claimed, 2)
		require.NoError(t, q.ReleaseJobs(context.Background(), "someone else", []int64{first, second}))
		require.Empty(t, claimFair(t, q, 10, jobs.ClaimFilter{}), "another worker's release changes nothing")
		require.NoError(t, q.ReleaseJobs(context.Background(), "w", []int64{second, first}))
		again := claimFair(t, q, 1, jobs.ClaimFilter{})
		require.Equal(t, []int64{first}, ids(again), "the older job first, as before")
		require.Equal(t, 1, again[0].Attempt, "the released attempt was not counted")
	})

	// A backlog of one account longer than a claim does not keep another
	// account's job out of it.
	t.Run("ClaimReachesPastABacklog", func(t *testing.T) {
		t.Parallel()
		q := open(t)
		const backlog = 500
		for i := range backlog {
			enqueueFor(t, q, "acc_a", "webhook:acc_a", "", at.Add(time.Duration(i)*time.Microsecond))
		}
		bID := enqueueFor(t, q, "acc_b", "webhook:acc_b", "", at.Add(time.Second))
		claimed := claimFair(t, q, 16, jobs.ClaimFilter{AccountShare: 4, AccountCeiling: 12})
		require.Len(t, claimed, 13, "A's share, B's job, then A borrows up to its ceiling")
		require.Contains(t, ids(claimed), bID)
	})
}
