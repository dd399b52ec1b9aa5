package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// gauge follows how many handlers of each key run at once, and the most.
type gauge struct {
	mu            sync.Mutex
	running, peak map[string]int
}

func newGauge() *gauge { return &gauge{running: map[string]int{}, peak: map[string]int{}} }

func (g *gauge) enter(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[key]++
	g.peak[key] = max(g.peak[key], g.running[key])
}

func (g *gauge) leave(key string) { g.mu.Lock(); g.running[key]--; g.mu.Unlock() }

func (g *gauge) max(key string) int { g.mu.Lock(); defer g.mu.Unlock(); return g.peak[key] }

// countRunning counts the jobs of an account or endpoint the table shows
// running: claimed ones, whether or not their handler started.
func (b *testBundle) countRunning(t *testing.T, column, key string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE state = 'running' AND "+column+" = ?", key).
		Scan(context.Background(), &n))
	return n
}

// An account whose endpoints hang holds, while it is alone, all the
// workers but a reserve (and at its share once others have work): another
// account's jobs run while it hangs, and the hanging account's jobs all
// run once it recovers.
func TestHangingAccountLeavesWorkersForOthers(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		recovered := make(chan struct{})
		rec, g := newRecorder(), newGauge()
		b.start(t, runner.Config{Workers: 8, AccountShare: 0.25}, runner.Kind{
			Name: "deliver",
			Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				g.enter(job.AccountID)
				defer g.leave(job.AccountID)
				if job.AccountID == "acc_a" {
					select {
					case <-recovered:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				rec.add(job)
				return nil
			}),
		})
		const backlog = 200
		var hanging []int64
		for i := range backlog {
			hanging = append(hanging, b.enqueue(t, jobs.EnqueueParams{
				Kind: "deliver", AccountID: "acc_a", EndpointKey: "webhook:acc_a" + string(rune('0'+i%8)),
			}))
		}
		// Alone, A borrows the workers no one else needs, all but a
		// reserve of one (an eighth of 8): its share binds only when
		// others have work.
		require.Eventually(t, func() bool { return g.max("acc_a") == 7 }, 10*time.Second, 5*time.Millisecond)
		for range 5 {
			other := b.enqueue(t, jobs.EnqueueParams{Kind: "deliver", AccountID: "acc_b", EndpointKey: "webhook:acc_b"})
			b.waitState(t, other, jobs.StateCompleted)
		}
		require.Zero(t, rec.count(hanging[0]), "account A's receivers still hang")
		require.Equal(t, 7, g.max("acc_a"), "A holds all but the reserve, no more")
		require.LessOrEqual(t, b.countRunning(t, "account_id", "acc_a"), 7, "A's other jobs wait in the queue, not in workers")

		close(recovered)
		for _, id := range hanging {
			b.waitState(t, id, jobs.StateCompleted)
			require.Equal(t, 1, rec.count(id))
		}
		require.Equal(t, 7, g.max("acc_a"))
	})
}

// An endpoint that answers is bounded by its account's share alone; once
// none of its attempts has answered for EndpointStall, at most
// EndpointLimit of them run at once: its other jobs wait unclaimed, and
// another endpoint's job runs meanwhile.
func TestEndpointLimitLeavesJobsInTheQueue(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		recovered := make(chan struct{})
		g := newGauge()
		b.start(t, runner.Config{Workers: 16, AccountShare: 1, EndpointLimit: 3, EndpointStall: time.Second}, runner.Kind{
			Name: "call",
			Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				g.enter(job.EndpointKey)
				defer g.leave(job.EndpointKey)
				if job.EndpointKey == "slow" {
					select {
					case <-recovered:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			}),
		})
		var slow []int64
		for range 2 {
			slow = append(slow, b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "slow"}))
		}
		require.Eventually(t, func() bool { return g.max("slow") == 2 }, 10*time.Second, 5*time.Millisecond)
		b.clock.Advance(2 * time.Second) // no answer for longer than the stall
		for range 40 {
			slow = append(slow, b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "slow"}))
		}
		require.Eventually(t, func() bool { return g.max("slow") == 3 }, 10*time.Second, 5*time.Millisecond)
		fast := b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "fast"})
		b.waitState(t, fast, jobs.StateCompleted)
		require.Equal(t, 3, b.countRunning(t, "endpoint_key", "slow"), "the stalled endpoint's other jobs are not claimed")
		close(recovered)
		for _, id := range slow {
			b.waitState(t, id, jobs.StateCompleted)
		}
	})
}

// attempts sums the attempts the table has counted for the jobs.
func (b *testBundle) attempts(t *testing.T, ids []int64) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		_, a, _ := b.state(t, id)
		n += a
	}
	return n
}

// BreakerFailures consecutive failures open the endpoint's breaker: its
// jobs stay in the queue without using attempts; after the open period
// one probe runs, and its failure opens the breaker for twice as long,
// its success closes it and the jobs run. The breaker's times are the
// database's, so the test waits them out.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		var down atomic.Bool
		down.Store(true)
		var tries atomic.Int64
		b.start(t, runner.Config{
			// One worker: the attempts fail one after the other.
			Workers: 1, AccountShare: 1, EndpointLimit: 1,
			BreakerFailures: 3, BreakerOpen: time.Second, BreakerMaxOpen: 10 * time.Second,
		}, flaky(&tries, &down))
		var ids []int64
		for range 10 {
			ids = append(ids, b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "flaky"}))
		}
		require.Eventually(t, func() bool { return tries.Load() >= 3 }, 10*time.Second, time.Millisecond)
		time.Sleep(150 * time.Millisecond) // several polls of 20 ms
		require.EqualValues(t, 3, tries.Load(), "open after three failures: nothing more is tried")
		require.Equal(t, 3, b.attempts(t, ids), "waiting jobs use no attempts")
		for _, id := range ids {
			s, _, _ := b.state(t, id)
			require.Contains(t, []string{string(jobs.StateAvailable), string(jobs.StateRetryable)}, s, "kept, not dropped")
		}
		other := b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "healthy"})
		b.waitState(t, other, jobs.StateCompleted)

		require.Eventually(t, func() bool { return tries.Load() == 4 }, 10*time.Second, time.Millisecond, "one probe after a second")
		probed := time.Now()
		time.Sleep(time.Second + 200*time.Millisecond)
		require.EqualValues(t, 4, tries.Load(), "the probe failed: open again, for two seconds (%s since)", time.Since(probed))

		down.Store(false)
		for _, id := range ids {
			b.waitState(t, id, jobs.StateCompleted)
		}
		require.EqualValues(t, 14, tries.Load(), "the probe closed the breaker: each job ran once more")
		require.Equal(t, 14, b.attempts(t, ids), "4 failed attempts and 10 successes, nothing else counted")
	})
}

// flaky is the kind "call": a job of endpoint "flaky" counts its try in
// tries and fails without an answer while down holds; the others succeed.
func flaky(tries *atomic.Int64, down *atomic.Bool) runner.Kind {
	return runner.Kind{
		Name:    "call",
		Backoff: func(int) time.Duration { return 0 }, // failures are due again at once
		Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
			if job.EndpointKey != "flaky" {
				return nil
			}
			tries.Add(1)
			if down.Load() {
				return jobs.EndpointDown(errors.New("connection refused"))
			}
			return nil
		}),
	}
}

// A breaker one runner opened holds for another (another replica's, say):
// it claims none of the endpoint's jobs while it is open.
func TestBreakerHoldsForEveryRunner(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		var down atomic.Bool
		down.Store(true)
		var tries, othersTries atomic.Int64
		cfg := runner.Config{Workers: 1, AccountShare: 1, BreakerFailures: 3, BreakerOpen: time.Hour}
		first, err := runner.New(b.db.JobQueue(), b.db, runner.Config{WorkerID: "replica 1", Workers: cfg.Workers, AccountShare: 1,
			BreakerFailures: 3, BreakerOpen: time.Hour, Now: b.clock.Now, PollInterval: 20 * time.Millisecond}, flaky(&tries, &down))
		require.NoError(t, err)
		require.NoError(t, first.Start(context.Background()))
		var ids []int64
		for range 10 {
			ids = append(ids, b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "flaky"}))
		}
		require.Eventually(t, func() bool { return tries.Load() >= 3 }, 10*time.Second, time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, first.Stop(ctx))

		cfg.WorkerID = "replica 2"
		b.start(t, cfg, flaky(&othersTries, &down))
		other := b.enqueue(t, jobs.EnqueueParams{Kind: "call", AccountID: "acc_a", EndpointKey: "healthy"})
		b.waitState(t, other, jobs.StateCompleted)
		time.Sleep(150 * time.Millisecond) // several polls of 20 ms
		require.Zero(t, othersTries.Load(), "the second runner tries nothing of the open endpoint")
		require.EqualValues(t, 3, tries.Load())
	})
}

// The running jobs an account's bounds count are the pool's, in whichever
// runner: with another runner of the pool holding 12 of a lone account's
// jobs, a runner of 8 workers in a pool of 16 (a ceiling of 14) starts
// two, and another account's jobs run beside them.
func TestRunnerCountsThePoolsRunningJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		q := b.db.JobQueue()
		_, err := q.HeartbeatRunner(ctx, "replica 2", runner.DefaultPool, 8)
		require.NoError(t, err)
		for range 12 {
			b.enqueue(t, jobs.EnqueueParams{Kind: "hold", AccountID: "acc_a"})
		}
		elsewhere, err := q.ClaimJobs(ctx, "replica 2", []jobs.Lease{{Kind: "hold", Until: b.clock.Now().Add(time.Hour)}}, 12, b.clock.Now(), jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, elsewhere, 12)
		for range 20 {
			b.enqueue(t, jobs.EnqueueParams{Kind: "hold", AccountID: "acc_a"})
		}
		release := make(chan struct{})
		defer close(release)
		var started atomic.Int64
		b.start(t, runner.Config{WorkerID: "replica 1", Workers: 8, AccountShare: 0.25, PollInterval: time.Minute},
			holding(&started, release))
		require.Eventually(t, func() bool { return started.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		require.EqualValues(t, 2, started.Load(), "14 of the pool's 16 workers, 12 of them elsewhere")
		for range 3 {
			b.enqueue(t, jobs.EnqueueParams{Kind: "hold", AccountID: "acc_b"})
		}
		require.Eventually(t, func() bool { return started.Load() == 5 }, 10*time.Second, 5*time.Millisecond,
			"another account's jobs start on the idle workers")
	})
}

// A paced key at its concurrency limit does not hold workers waiting: its
// jobs stay queued and other jobs run.
func TestPaceLimitHoldsNoWorker(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		recovered := make(chan struct{})
		b.start(t, runner.Config{Workers: 2, AccountShare: 1, MaxPaceWait: time.Hour}, runner.Kind{
			Name: "ordered", Pace: runner.Pace{MaxConcurrent: 1},
			Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				if job.PaceKey == "thread-a" {
					select {
					case <-recovered:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			}),
		})
		var a []int64
		for range 20 {
			a = append(a, b.enqueue(t, jobs.EnqueueParams{Kind: "ordered", PaceKey: "thread-a"}))
		}
		other := b.enqueue(t, jobs.EnqueueParams{Kind: "ordered", PaceKey: "thread-b"})
		b.waitState(t, other, jobs.StateCompleted)
		close(recovered)
		for _, id := range a {
			b.waitState(t, id, jobs.StateCompleted)
			_, attempt, _ := b.state(t, id)
			require.Equal(t, 1, attempt, "put back without using an attempt")
		}
	})
}

// countingQueue counts the runner's looks for the next due job.
type countingQueue struct {
	runner.Queue
	nextLooks atomic.Int64
}

func (q *countingQueue) NextJobAt(ctx context.Context, kinds []string) (time.Time, error) {
	q.nextLooks.Add(1)
	return q.Queue.NextJobAt(ctx, kinds)
}

// A lone account whose claim filled it to its ceiling has due jobs left:
// once a claim found nothing it could take, the runner waits for one of
// its jobs to end (or a short while) instead of claiming again at once.
func TestAccountAtItsCeilingWaitsForRoom(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		for range 30 {
			b.enqueue(t, jobs.EnqueueParams{Kind: "hold", AccountID: "acc_a"})
		}
		release := make(chan struct{})
		var started atomic.Int64
		q := &countingQueue{Queue: b.db.JobQueue()}
		// Workers 16 with a share of 0.25: a ceiling of 14, two workers kept.
		b.startOn(t, q, runner.Config{Workers: 16, AccountShare: 0.25, PollInterval: time.Minute},
			holding(&started, release))
		require.Eventually(t, func() bool { return started.Load() == 14 }, 10*time.Second, 5*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, int64(14), started.Load())
		require.LessOrEqual(t, q.nextLooks.Load(), int64(2), "due jobs are left: the runner waits, it does not look again and again")
		close(release)
	})
}

// The reserve a lone busy account leaves idle is an eighth of the workers
// up to 16: with 200 workers it runs 184 of its jobs at once, not 175.
func TestLoneAccountReserveIsAtMostSixteen(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		for range 200 {
			b.enqueue(t, jobs.EnqueueParams{Kind: "hold", AccountID: "acc_a"})
		}
		release := make(chan struct{})
		var started atomic.Int64
		b.startOn(t, b.db.JobQueue(), runner.Config{Workers: 200, AccountShare: 0.25, PollInterval: time.Minute},
			holding(&started, release))
		require.Eventually(t, func() bool { return started.Load() == 184 }, 10*time.Second, 5*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, int64(184), started.Load())
		close(release)
	})
}

// holding is the kind "hold": each job counts its start in started and
// runs until release closes.
func holding(started *atomic.Int64, release <-chan struct{}) runner.Kind {
	return runner.Kind{Name: "hold", Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
		started.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})}
}
