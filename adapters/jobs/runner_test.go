package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// clock is a settable test clock shared by the store and the runner.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recorder counts runs per job id and remembers what the handler saw.
type recorder struct {
	mu   sync.Mutex
	runs map[int64]int
	seen []jobs.Job
}

func newRecorder() *recorder { return &recorder{runs: map[int64]int{}} }

func (r *recorder) add(job jobs.Job) {
	r.mu.Lock()
	r.runs[job.ID]++
	r.seen = append(r.seen, job)
	r.mu.Unlock()
}

func (r *recorder) count(id int64) int { r.mu.Lock(); defer r.mu.Unlock(); return r.runs[id] }

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.runs {
		n += c
	}
	return n
}

type testBundle struct {
	db    *store.DB
	clock *clock
}

func setup(t *testing.T, dialect store.Dialect) *testBundle {
	t.Helper()
	c := newClock()
	db, err := store.Open(context.Background(), dbtest.URL(t, dialect), store.Options{Now: c.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &testBundle{db: db, clock: c}
}

// start runs a runner over the bundle's database until the test ends.
func (b *testBundle) start(t *testing.T, cfg runner.Config, kinds ...runner.Kind) *runner.Runner {
	t.Helper()
	return b.startOn(t, b.db.JobQueue(), cfg, kinds...)
}

// startOn runs a runner over q, woken by the bundle's database, until the
// test ends.
func (b *testBundle) startOn(t *testing.T, q runner.Queue, cfg runner.Config, kinds ...runner.Kind) *runner.Runner {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = b.clock.Now
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.RescueInterval == 0 {
		cfg.RescueInterval = 20 * time.Millisecond
	}
	r, err := runner.New(q, b.db, cfg, kinds...)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return r
}

func (b *testBundle) enqueue(t *testing.T, p jobs.EnqueueParams) int64 {
	t.Helper()
	id, err := b.db.WebhookStore().EnqueueJob(context.Background(), p)
	require.NoError(t, err)
	return id
}

// state reads a job's state straight from the table.
func (b *testBundle) state(t *testing.T, id int64) (state string, attempt int, runAt int64) {
	t.Helper()
	err := b.db.Bun().NewRaw("SELECT state, attempt, run_at FROM jobs WHERE id = ?", id).Scan(context.Background(), &state, &attempt, &runAt)
	require.NoError(t, err)
	return state, attempt, runAt
}

func (b *testBundle) waitState(t *testing.T, id int64, want jobs.State) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, _, _ := b.state(t, id)
		return s == string(want)
	}, 20*time.Second, 5*time.Millisecond, "job %d never became %s", id, want)
}

func recording(rec *recorder) runner.Handler {
	return runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
		rec.add(job)
		return nil
	})
}

func TestEachJobRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		// Four workers claiming fifty at a time overlap on every claim
		// long before a thousand jobs are done; more jobs only cost time.
		const total = 1000
		ctx := context.Background()
		ids := make([]int64, 0, total)
		for batch := 0; batch < total/500; batch++ {
			require.NoError(t, b.db.Transact(ctx, func(ctx context.Context, c *store.Conn) error {
				r := store.JobQueue{Conn: c}
				for i := 0; i < 500; i++ {
					id, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "noop", Payload: []byte(fmt.Sprint(i))})
					if err != nil {
						return err
					}
					ids = append(ids, id)
				}
				return nil
			}))
		}
		rec := newRecorder()
		b.start(t, runner.Config{Workers: 4, ClaimBatch: 50}, runner.Kind{Name: "noop", Handler: recording(rec)})
		require.Eventually(t, func() bool { return rec.total() >= total }, 5*time.Minute, 20*time.Millisecond)
		for _, id := range ids {
			require.Equal(t, 1, rec.count(id), "job %d", id)
		}
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, b.db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE state = 'completed'").Scan(ctx, &n))
			return n == total
		}, 20*time.Second, 10*time.Millisecond, "every completion is recorded")
		require.Equal(t, total, rec.total(), "nothing ran twice")
	})
}

func TestScheduledJobsWaitForTheirTime(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		rec := newRecorder()
		b.start(t, runner.Config{}, runner.Kind{Name: "later", Handler: recording(rec)})
		later := b.enqueue(t, jobs.EnqueueParams{Kind: "later", RunAt: b.clock.Now().Add(time.Hour)})
		now := b.enqueue(t, jobs.EnqueueParams{Kind: "later"})
		b.waitState(t, now, jobs.StateCompleted)
		time.Sleep(100 * time.Millisecond) // several polls
		require.Equal(t, 0, rec.count(later), "not before its run-at time")

		b.clock.Advance(time.Hour - time.Second)
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, 0, rec.count(later), "not a second early")
		b.clock.Advance(time.Second)
		b.waitState(t, later, jobs.StateCompleted)
		require.Equal(t, 1, rec.count(later))
	})
}

func TestUniqueKeysAndCancel(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		first := b.enqueue(t, jobs.EnqueueParams{Kind: "u", UniqueKey: "msg_1", RunAt: b.clock.Now().Add(time.Minute)})
		again := b.enqueue(t, jobs.EnqueueParams{Kind: "u", UniqueKey: "msg_1"})
		require.Equal(t, first, again, "a pending job with the key absorbs the enqueue")

		cancelled := b.enqueue(t, jobs.EnqueueParams{Kind: "u", UniqueKey: "msg_2", RunAt: b.clock.Now().Add(time.Minute)})
		n, err := b.db.JobQueue().CancelJobs(ctx, "msg_2")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = b.db.JobQueue().CancelJobs(ctx, "msg_2")
		require.NoError(t, err)
		require.Zero(t, n)

		rec := newRecorder()
		b.start(t, runner.Config{}, runner.Kind{Name: "u", Handler: recording(rec)})
		b.clock.Advance(time.Minute)
		b.waitState(t, first, jobs.StateCompleted)
		s, _, _ := b.state(t, cancelled)
		require.Equal(t, string(jobs.StateCancelled), s)
		time.Sleep(50 * time.Millisecond)
		require.Equal(t, 0, rec.count(cancelled), "a cancelled job never runs")

		next := b.enqueue(t, jobs.EnqueueParams{Kind: "u", UniqueKey: "msg_1"})
		require.NotEqual(t, first, next, "once finished, the key is free again")
		b.waitState(t, next, jobs.StateCompleted)
	})
}

func TestRetriesFollowTheSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		var calls atomic.Int32
		backoff := func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }
		b.start(t, runner.Config{}, runner.Kind{Name: "flaky", Backoff: backoff, Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
			n := calls.Add(1)
			require.Equal(t, int(n), job.Attempt, "the handler sees its attempt number")
			switch n {
			case 1, 2:
				return errors.New("provider unavailable")
			case 3:
				return jobs.RetryAfter(30*time.Second, errors.New("429"))
			}
			return nil
		})})
		start := b.clock.Now()
		id := b.enqueue(t, jobs.EnqueueParams{Kind: "flaky"})

		waitRetry := func(wantAttempt int, wantRunAt time.Time) {
			t.Helper()
			require.Eventually(t, func() bool {
				s, attempt, _ := b.state(t, id)
				return s == string(jobs.StateRetryable) && attempt == wantAttempt
			}, 10*time.Second, 5*time.Millisecond)
			_, _, runAt := b.state(t, id)
			require.Equal(t, wantRunAt.UnixMicro(), runAt)
		}
		waitRetry(1, start.Add(time.Minute))
		b.clock.Advance(59 * time.Second)
		time.Sleep(60 * time.Millisecond)
		require.EqualValues(t, 1, calls.Load(), "not retried early")
		b.clock.Advance(time.Second)
		waitRetry(2, start.Add(time.Minute+2*time.Minute))
		b.clock.Advance(2 * time.Minute)
		waitRetry(3, start.Add(3*time.Minute+30*time.Second))
		b.clock.Advance(30 * time.Second)
		b.waitState(t, id, jobs.StateCompleted)
		require.EqualValues(t, 4, calls.Load())
	})
}

func TestPermanentFailuresAndDeadJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		var fixed atomic.Bool
		var calls atomic.Int32
		b.start(t, runner.Config{}, runner.Kind{
			Name:    "fragile",
			Backoff: func(int) time.Duration { return 0 },
			Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				calls.Add(1)
				switch {
				case fixed.Load():
					return nil
				case string(job.Payload) == "permanent":
					return jobs.Permanent(errors.New("recipient does not exist"))
				case string(job.Payload) == "panic":
					panic("handler bug")
				}
				return errors.New("still broken")
			}),
		})
		permanent := b.enqueue(t, jobs.EnqueueParams{Kind: "fragile", Payload: []byte("permanent"), MaxAttempts: 5})
		exhausted := b.enqueue(t, jobs.EnqueueParams{Kind: "fragile", Payload: []byte("flaky"), MaxAttempts: 3})
		panics := b.enqueue(t, jobs.EnqueueParams{Kind: "fragile", Payload: []byte("panic"), MaxAttempts: 2})
		b.waitState(t, permanent, jobs.StateDead)
		b.waitState(t, exhausted, jobs.StateDead)
		b.waitState(t, panics, jobs.StateDead)
		_, attempt, _ := b.state(t, permanent)
		require.Equal(t, 1, attempt, "a permanent failure is not retried")
		_, attempt, _ = b.state(t, exhausted)
		require.Equal(t, 3, attempt)

		dead, err := b.db.JobQueue().DeadJobs(ctx, "fragile", 10)
		require.NoError(t, err)
		require.Len(t, dead, 3)
		byID := map[int64]store.DeadJob{}
		for _, d := range dead {
			byID[d.ID] = d
		}
		require.Contains(t, byID[permanent].LastError, "recipient does not exist")
		require.Contains(t, byID[exhausted].LastError, "still broken")
		require.Contains(t, byID[panics].LastError, "handler panicked")

		fixed.Store(true)
		require.NoError(t, b.db.JobQueue().RerunJob(ctx, exhausted))
		b.waitState(t, exhausted, jobs.StateCompleted)
		err = b.db.JobQueue().RerunJob(ctx, exhausted)
		require.Error(t, err, "only dead jobs can be re-run")
	})
}

func TestRolledBackEnqueueNeverRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		rec := newRecorder()
		b.start(t, runner.Config{}, runner.Kind{Name: "tx", Handler: recording(rec)})
		boom := errors.New("message insert failed")
		err := b.db.Transact(ctx, func(ctx context.Context, c *store.Conn) error {
			r := store.JobQueue{Conn: c}
			if _, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "tx", UniqueKey: "rolled-back"}); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		committed := b.enqueue(t, jobs.EnqueueParams{Kind: "tx"})
		b.waitState(t, committed, jobs.StateCompleted)
		var n int
		require.NoError(t, b.db.Bun().NewRaw("SELECT count(*) FROM jobs").Scan(ctx, &n))
		require.Equal(t, 1, n, "the rolled-back job does not exist")
		require.Equal(t, 1, rec.total())
	})
}

func TestExpiredLeasesAreRescued(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		id := b.enqueue(t, jobs.EnqueueParams{Kind: "lost", MaxAttempts: 3})
		// A worker that claims the job and then dies.
		now := b.clock.Now()
		claimed, err := b.db.JobQueue().ClaimJobs(ctx, "crashed-worker", []jobs.Lease{{Kind: "lost", Until: now.Add(time.Minute)}}, 10, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, b.db.JobQueue().CompleteJobs(ctx, "someone-else", []int64{id}, now))
		s, _, _ := b.state(t, id)
		require.Equal(t, string(jobs.StateRunning), s, "only the lease holder can complete a job")

		rec := newRecorder()
		b.start(t, runner.Config{}, runner.Kind{Name: "lost", Handler: recording(rec)})
		time.Sleep(60 * time.Millisecond)
		require.Equal(t, 0, rec.count(id), "a live lease is respected")
		b.clock.Advance(time.Minute + time.Second)
		b.waitState(t, id, jobs.StateCompleted)
		require.Equal(t, 1, rec.count(id))
		require.Equal(t, 2, rec.seen[0].Attempt, "the lost attempt counts")
	})
}

func TestPacingPerKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		var (
			mu      sync.Mutex
			running = map[string]int{}
			peak    = map[string]int{}
			release = make(chan struct{})
		)
		b.start(t, runner.Config{Workers: 8, MaxPaceWait: 10 * time.Second}, runner.Kind{
			Name: "paced", Pace: runner.Pace{MaxConcurrent: 2},
			Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				mu.Lock()
				running[job.PaceKey]++
				peak[job.PaceKey] = max(peak[job.PaceKey], running[job.PaceKey])
				mu.Unlock()
				<-release
				mu.Lock()
				running[job.PaceKey]--
				mu.Unlock()
				return nil
			}),
		})
		var ids []int64
		for i := 0; i < 6; i++ {
			ids = append(ids, b.enqueue(t, jobs.EnqueueParams{Kind: "paced", PaceKey: "+14155550100"}))
			ids = append(ids, b.enqueue(t, jobs.EnqueueParams{Kind: "paced", PaceKey: "+14155550199"}))
		}
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return running["+14155550100"] == 2 && running["+14155550199"] == 2
		}, 10*time.Second, 5*time.Millisecond, "each key runs up to its limit, independently")
		time.Sleep(50 * time.Millisecond)
		close(release)
		for _, id := range ids {
			b.waitState(t, id, jobs.StateCompleted)
		}
		require.Equal(t, 2, peak["+14155550100"])
		require.Equal(t, 2, peak["+14155550199"])
	})
}

func TestRateLimitedKeyIsSnoozedNotRun(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	rec := newRecorder()
	b.start(t, runner.Config{MaxPaceWait: 10 * time.Millisecond}, runner.Kind{
		Name: "slow", Pace: runner.Pace{PerSecond: 0.001, Burst: 1}, Handler: recording(rec),
	})
	first := b.enqueue(t, jobs.EnqueueParams{Kind: "slow", PaceKey: "bot"})
	b.waitState(t, first, jobs.StateCompleted)
	second := b.enqueue(t, jobs.EnqueueParams{Kind: "slow", PaceKey: "bot"})
	require.Eventually(t, func() bool {
		s, attempt, runAt := b.state(t, second)
		return s == string(jobs.StateAvailable) && attempt == 0 && runAt > b.clock.Now().Add(time.Minute).UnixMicro()
	}, 10*time.Second, 5*time.Millisecond, "over its rate, a job goes back for later without using an attempt")
	require.Equal(t, 0, rec.count(second))
}

func TestStopWaitsForRunningJobsThenLeavesThemToTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	started := make(chan struct{}, 2)
	finish := make(chan struct{})
	var sawCancel atomic.Bool
	r, err := runner.New(b.db.JobQueue(), b.db, runner.Config{Now: b.clock.Now, PollInterval: 20 * time.Millisecond}, runner.Kind{
		Name: "long", Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
			started <- struct{}{}
			select {
			case <-finish:
				return nil
			case <-ctx.Done():
				sawCancel.Store(true)
				return ctx.Err()
			}
		}),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	quick := b.enqueue(t, jobs.EnqueueParams{Kind: "long", Payload: []byte("finishes")})
	<-started
	// Stop while the job runs; it finishes within the deadline.
	go func() { time.Sleep(50 * time.Millisecond); close(finish) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	require.NoError(t, r.Stop(ctx))
	cancel()
	s, _, _ := b.state(t, quick)
	require.Equal(t, string(jobs.StateCompleted), s, "a job that finishes during shutdown is recorded")

	// A second runner whose job does not finish in time.
	r2, err := runner.New(b.db.JobQueue(), b.db, runner.Config{Now: b.clock.Now, PollInterval: 20 * time.Millisecond}, runner.Kind{
		Name: "long", Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
			started <- struct{}{}
			<-ctx.Done()
			sawCancel.Store(true)
			return ctx.Err()
		}),
	})
	require.NoError(t, err)
	require.NoError(t, r2.Start(context.Background()))
	stuck := b.enqueue(t, jobs.EnqueueParams{Kind: "long"})
	<-started
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.Error(t, r2.Stop(ctx), "stop reports jobs it had to abandon")
	require.True(t, sawCancel.Load(), "abandoned handlers are cancelled")
	s, _, _ = b.state(t, stuck)
	require.Contains(t, []string{string(jobs.StateRunning), string(jobs.StateRetryable)}, s, "the job is not lost")
}

// Each runner prunes the completed jobs of its own kinds after its own
// retention; dead jobs stay.
func TestPruneKeepsDeadJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		kept := b.enqueue(t, jobs.EnqueueParams{Kind: "kept-longer"})
		b.start(t, runner.Config{Retention: 48 * time.Hour, PruneInterval: 10 * time.Millisecond}, runner.Kind{
			Name: "kept-longer", Handler: runner.HandlerFunc(func(context.Context, jobs.Job) error { return nil }),
		})
		b.waitState(t, kept, jobs.StateCompleted)
		ok := b.enqueue(t, jobs.EnqueueParams{Kind: "p"})
		bad := b.enqueue(t, jobs.EnqueueParams{Kind: "p", Payload: []byte("fail"), MaxAttempts: 1})
		b.start(t, runner.Config{Retention: time.Hour, PruneInterval: 10 * time.Millisecond}, runner.Kind{
			Name: "p", Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
				if string(job.Payload) == "fail" {
					return errors.New("no")
				}
				return nil
			}),
		})
		b.waitState(t, ok, jobs.StateCompleted)
		b.waitState(t, bad, jobs.StateDead)
		time.Sleep(50 * time.Millisecond)
		b.state(t, ok) // still there within the retention period

		b.clock.Advance(time.Hour + time.Second)
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, b.db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE id = ?", ok).Scan(context.Background(), &n))
			return n == 0
		}, 10*time.Second, 10*time.Millisecond, "a completed job is pruned after the retention period")
		s, _, _ := b.state(t, bad)
		require.Equal(t, string(jobs.StateDead), s, "dead jobs stay until re-run")
		s, _, _ = b.state(t, kept)
		require.Equal(t, string(jobs.StateCompleted), s, "another runner's kind is kept for its own retention")
	})
}

func TestMetricsReportDepthAndAge(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	reg := prometheus.NewRegistry()
	m := runner.NewMetrics(reg, b.db.JobQueue(), b.clock.Now)
	b.enqueue(t, jobs.EnqueueParams{Kind: "m", RunAt: b.clock.Now().Add(-90 * time.Second)})
	b.enqueue(t, jobs.EnqueueParams{Kind: "m"})
	b.enqueue(t, jobs.EnqueueParams{Kind: "m", RunAt: b.clock.Now().Add(time.Hour)})
	require.Equal(t, 2.0, metricValue(t, reg, "switchboard_jobs_queued", "kind", "m", "state", "ready"))
	require.Equal(t, 1.0, metricValue(t, reg, "switchboard_jobs_queued", "kind", "m", "state", "scheduled"))
	require.Equal(t, 90.0, metricValue(t, reg, "switchboard_jobs_oldest_ready_seconds", "kind", "m"))

	b.start(t, runner.Config{Metrics: m}, runner.Kind{Name: "m", Backoff: func(int) time.Duration { return time.Hour },
		Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error { return errors.New("down") })})
	// The failed jobs wait an hour for their retry, beside the future one.
	require.Eventually(t, func() bool {
		return metricValue(t, reg, "switchboard_jobs_queued", "kind", "m", "state", "scheduled") == 3
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 0.0, metricValue(t, reg, "switchboard_jobs_queued", "kind", "m", "state", "ready"))
	require.Equal(t, 2.0, metricValue(t, reg, "switchboard_jobs_failures_total", "kind", "m", "outcome", "retry"))
	require.Equal(t, 2.0, metricValue(t, reg, "switchboard_jobs_attempts_total", "kind", "m"))
}

// metricValue finds one sample by name and label pairs; a missing sample is 0.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// claimCounting counts the runner's claims.
type claimCounting struct {
	runner.Queue
	claims atomic.Int64
}

func (q *claimCounting) ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, filter jobs.ClaimFilter) ([]jobs.Job, error) {
	q.claims.Add(1)
	return q.Queue.ClaimJobs(ctx, worker, leases, limit, now, filter)
}

// Commits of other kinds' jobs wake every runner; a runner with a
// WakeGap claims at most once per gap for them, where one without claims
// at nearly each. A job of its own kind enqueued meanwhile still runs
// within the gap.
func TestWakeGapHoldsBackWakeUps(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	const gap = 400 * time.Millisecond
	ran := make(chan struct{}, 1)
	seldom := func(name string) runner.Kind {
		return runner.Kind{Name: name, Handler: runner.HandlerFunc(func(context.Context, jobs.Job) error {
			ran <- struct{}{}
			return nil
		})}
	}
	eager, gapped := &claimCounting{Queue: b.db.JobQueue()}, &claimCounting{Queue: b.db.JobQueue()}
	b.startOn(t, eager, runner.Config{PollInterval: time.Minute}, seldom("seldom-eager"))
	b.startOn(t, gapped, runner.Config{PollInterval: time.Minute, WakeGap: gap}, seldom("seldom-gapped"))
	require.Eventually(t, func() bool { return eager.claims.Load() >= 1 && gapped.claims.Load() >= 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(gap) // the gap after the claims at start has passed
	eagerBefore, gappedBefore := eager.claims.Load(), gapped.claims.Load()

	// Forty commits of another kind, five milliseconds apart.
	start := time.Now()
	for range 40 {
		b.enqueue(t, jobs.EnqueueParams{Kind: "other", RunAt: b.clock.Now().Add(time.Hour)})
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(gap + 100*time.Millisecond)
	// One claim at the first wake-up, then at most one per gap.
	gaps := int64(time.Since(start)/gap) + 1
	require.Greater(t, eager.claims.Load()-eagerBefore, int64(10), "without a gap each wake-up claims")
	require.LessOrEqual(t, gapped.claims.Load()-gappedBefore, gaps, "at most one claim per gap for the wake-ups")

	b.enqueue(t, jobs.EnqueueParams{Kind: "seldom-gapped"})
	select {
	case <-ran:
	case <-time.After(10 * gap):
		t.Fatal("a job of the gapped runner's kind did not run within its gap")
	}
}
