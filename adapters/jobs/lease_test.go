package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
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

// lease reads a job's lease straight from the table.
func (b *testBundle) lease(t *testing.T, id int64) (owner string, until time.Time) {
	t.Helper()
	var us int64
	err := b.db.Bun().NewRaw("SELECT COALESCE(lease_owner, ''), COALESCE(lease_expires_at, 0) FROM jobs WHERE id = ?", id).
		Scan(context.Background(), &owner, &us)
	require.NoError(t, err)
	return owner, time.UnixMicro(us).UTC()
}

// blocking is a handler that signals its start and runs until released or
// cancelled, recording the cause of a cancellation.
type blocking struct {
	started chan int64
	release chan struct{}
	mu      sync.Mutex
	causes  map[int64]error
}

func newBlocking() *blocking {
	return &blocking{started: make(chan int64, 16), release: make(chan struct{}), causes: map[int64]error{}}
}

func (h *blocking) Work(ctx context.Context, job jobs.Job) error {
	h.started <- job.ID
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		h.mu.Lock()
		h.causes[job.ID] = context.Cause(ctx)
		h.mu.Unlock()
		return ctx.Err()
	}
}

func (h *blocking) cause(id int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.causes[id]
}

// A claim leases each job for its own kind's lease, not the longest.
func TestClaimLeasesEachKindForItsOwnLease(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		h := newBlocking()
		defer close(h.release)
		b.start(t, runner.Config{Lease: 20 * time.Second},
			runner.Kind{Name: "delivery", Lease: 10 * time.Second, Handler: h},
			runner.Kind{Name: "email", Timeout: 5 * time.Minute, Handler: h},
			runner.Kind{Name: "report", Timeout: time.Hour, Lease: 5 * time.Minute, Handler: h})
		now := b.clock.Now()
		want := map[int64]time.Time{
			b.enqueue(t, jobs.EnqueueParams{Kind: "delivery"}): now.Add(10 * time.Second),
			b.enqueue(t, jobs.EnqueueParams{Kind: "email"}):    now.Add(20 * time.Second),
			b.enqueue(t, jobs.EnqueueParams{Kind: "report"}):   now.Add(5 * time.Minute),
		}
		for range want {
			<-h.started
		}
		for id, until := range want {
			owner, got := b.lease(t, id)
			require.NotEmpty(t, owner)
			require.Equal(t, until, got, "job %d", id)
		}
	})
}

// The heartbeat renews a running job's lease, so a job may run longer than
// its lease without being rescued.
func TestHeartbeatRenewsTheLeaseOfARunningJob(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		h := newBlocking()
		// Each renewal may take up to a heartbeat: 200 ms leaves room for
		// a loaded machine (at 20 ms, renewals under -race beside other
		// suites all timed out for 10 s).
		r := b.start(t, runner.Config{HeartbeatInterval: 200 * time.Millisecond},
			runner.Kind{Name: "long", Timeout: time.Hour, Lease: time.Minute, Handler: h})
		id := b.enqueue(t, jobs.EnqueueParams{Kind: "long"})
		<-h.started
		start := b.clock.Now()
		_, until := b.lease(t, id)
		require.Equal(t, start.Add(time.Minute), until)

		for step := 1; step <= 3; step++ {
			b.clock.Advance(50 * time.Second)
			want := start.Add(time.Duration(step)*50*time.Second + time.Minute)
			require.Eventually(t, func() bool {
				_, until := b.lease(t, id)
				return until.Equal(want)
			}, 10*time.Second, 5*time.Millisecond, "step %d: the heartbeat extends the lease from now", step)
		}
		// 150 s into a job with a 60 s lease, rescues running all along.
		time.Sleep(100 * time.Millisecond)
		owner, _ := b.lease(t, id)
		require.Equal(t, r.WorkerID(), owner, "the job was never rescued")
		s, attempt, _ := b.state(t, id)
		require.Equal(t, string(jobs.StateRunning), s)
		require.Equal(t, 1, attempt)
		require.NoError(t, h.cause(id), "the job was not cancelled")
		close(h.release)
		b.waitState(t, id, jobs.StateCompleted)
	})
}

// A job whose heartbeat finds its lease taken (rescued and claimed by
// another worker) is cancelled, and its worker leaves the job's row to the
// new holder.
func TestLostLeaseCancelsTheJob(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		h := newBlocking()
		defer close(h.release)
		b.start(t, runner.Config{HeartbeatInterval: 20 * time.Millisecond},
			runner.Kind{Name: "k", Lease: time.Minute, Handler: h})
		id := b.enqueue(t, jobs.EnqueueParams{Kind: "k"})
		<-h.started
		// Another worker took the job over (as after a rescue).
		_, err := b.db.Bun().NewRaw("UPDATE jobs SET lease_owner = 'other-worker' WHERE id = ?", id).Exec(context.Background())
		require.NoError(t, err)
		require.Eventually(t, func() bool { return h.cause(id) != nil }, 10*time.Second, 5*time.Millisecond,
			"the heartbeat cancels the job")
		require.ErrorIs(t, h.cause(id), runner.ErrLeaseLost)
		time.Sleep(100 * time.Millisecond) // several heartbeats
		owner, _ := b.lease(t, id)
		require.Equal(t, "other-worker", owner)
		s, attempt, _ := b.state(t, id)
		require.Equal(t, string(jobs.StateRunning), s, "the cancelled attempt records no outcome")
		require.Equal(t, 1, attempt)
	})
}

// flakyRenewals is the store with RenewLeases failing while down is set.
type flakyRenewals struct {
	store.JobQueue
	down  atomic.Bool
	calls atomic.Int32
}

func (f *flakyRenewals) RenewLeases(ctx context.Context, worker string, ids []int64, leases []jobs.Lease) ([]int64, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return f.JobQueue.RenewLeases(ctx, worker, ids, leases)
}

// countingHandler counts log records by message.
type countingHandler struct {
	mu       sync.Mutex
	messages []string
}

func (c *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (c *countingHandler) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.messages = append(c.messages, r.Message)
	c.mu.Unlock()
	return nil
}
func (c *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countingHandler) WithGroup(string) slog.Handler      { return c }

func (c *countingHandler) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.messages {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// While the database is away, failing heartbeats log once and cancel a job
// only when its lease has really ended.
func TestHeartbeatOutageKeepsJobsUntilTheirLeaseEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	q := &flakyRenewals{JobQueue: b.db.JobQueue()}
	logs := &countingHandler{}
	h := newBlocking()
	defer close(h.release)
	r, err := runner.New(q, b.db, runner.Config{
		// A renewal is given one heartbeat: at 10 ms, under -race beside
		// the other suites, every renewal after the outage timed out too,
		// and the outage never ended.
		Now: b.clock.Now, PollInterval: 20 * time.Millisecond, RescueInterval: time.Hour,
		HeartbeatInterval: 100 * time.Millisecond, Logger: slog.New(logs),
	}, runner.Kind{Name: "k", Lease: time.Minute, Handler: h})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	id := b.enqueue(t, jobs.EnqueueParams{Kind: "k"})
	<-h.started
	b.clock.Advance(30 * time.Second)
	require.Eventually(t, func() bool {
		_, until := b.lease(t, id)
		return until.Equal(b.clock.Now().Add(time.Minute))
	}, 10*time.Second, 5*time.Millisecond, "renewed before the outage")
	renewedUntil := b.clock.Now().Add(time.Minute)

	// A renewal slower than the heartbeat (under -race, on a busy
	// machine) is a short outage of its own, with its two lines: only the
	// lines from here on are about this outage.
	failedBefore, worksBefore := logs.count("renew job leases failed"), logs.count("renew job leases works again")
	q.down.Store(true)
	before := q.calls.Load()
	require.Eventually(t, func() bool { return q.calls.Load() >= before+20 }, 10*time.Second, 5*time.Millisecond)
	b.clock.Advance(59 * time.Second)
	callsAt := q.calls.Load()
	require.Eventually(t, func() bool { return q.calls.Load() >= callsAt+5 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, h.cause(id), "a second before its lease ends, the job still runs")

	b.clock.Advance(time.Second)
	require.True(t, !b.clock.Now().Before(renewedUntil))
	require.Eventually(t, func() bool { return h.cause(id) != nil }, 10*time.Second, 5*time.Millisecond,
		"once its lease has ended, the job is cancelled")
	require.ErrorIs(t, h.cause(id), runner.ErrLeaseLost)
	// One line for the whole outage; none when a slow renewal's own
	// outage was still open when this one began (its line covers both).
	require.LessOrEqual(t, logs.count("renew job leases failed")-failedBefore, 1, "one line for the whole outage, not one per attempt")

	q.down.Store(false)
	b.enqueue(t, jobs.EnqueueParams{Kind: "k"})
	<-h.started
	require.Eventually(t, func() bool { return logs.count("renew job leases works again")-worksBefore >= 1 }, 10*time.Second, 5*time.Millisecond,
		"one line when it ends")
}

// slowClaims is the store whose first claim is still on its way when the
// runner is told to stop, and then commits on the server whatever its
// context says, as a Postgres statement does once sent (pgdriver cannot
// cancel it); database/sql then reports the context's end instead of the
// rows.
type slowClaims struct {
	store.JobQueue
	started, stopping chan struct{}
	once              sync.Once
}

func (s *slowClaims) ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, filter jobs.ClaimFilter) ([]jobs.Job, error) {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return s.JobQueue.ClaimJobs(ctx, worker, leases, limit, now, filter)
	}
	close(s.started)
	<-s.stopping
	time.Sleep(50 * time.Millisecond) // the stop cancels what it cancels
	claimed, err := s.JobQueue.ClaimJobs(context.WithoutCancel(ctx), worker, leases, limit, now, filter)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	return claimed, err
}

// A claim on its way when the runner stops finishes, and its jobs run
// before the stop returns: cancelled, the claim's jobs stayed leased to a
// runner that had dropped them, undelivered until their leases ended
// (measured: a batch of 194 deliveries at each stop of a busy server).
func TestStopFinishesTheClaimOnItsWay(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	q := &slowClaims{JobQueue: b.db.JobQueue(), started: make(chan struct{}), stopping: make(chan struct{})}
	ids := []int64{b.enqueue(t, jobs.EnqueueParams{Kind: "k"}), b.enqueue(t, jobs.EnqueueParams{Kind: "k"})}
	rec := newRecorder()
	r, err := runner.New(q, b.db, runner.Config{Now: b.clock.Now, PollInterval: 20 * time.Millisecond},
		runner.Kind{Name: "k", Handler: recording(rec)})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	<-q.started

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- r.Stop(ctx)
	}()
	close(q.stopping)
	require.NoError(t, <-stopped)
	for _, id := range ids {
		state, _, _ := b.state(t, id)
		require.Equal(t, string(jobs.StateCompleted), state, "job %d was claimed at the stop and left to its lease", id)
		require.Equal(t, 1, rec.count(id))
	}
}

// fakeLiveness is a Liveness whose events the test sends.
type fakeLiveness struct {
	deaths, returned chan struct{}
}

func newFakeLiveness() *fakeLiveness {
	return &fakeLiveness{deaths: make(chan struct{}, 1), returned: make(chan struct{}, 1)}
}

func (f *fakeLiveness) Subscribe() (deaths, returned <-chan struct{}, cancel func()) {
	return f.deaths, f.returned, func() {}
}

// When its process registers again after its registration lapsed (the
// database restarted), a runner checks its leases at once, not at its next
// heartbeat: a job another process took meanwhile is cancelled, the others
// keep running.
func TestRegisteredAgainChecksTheLeasesAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		h := newBlocking()
		defer close(h.release)
		live := newFakeLiveness()
		// A heartbeat every 20 minutes: only the event can tell the job.
		b.start(t, runner.Config{Liveness: live, Workers: 2}, runner.Kind{Name: "k", Lease: time.Hour, Handler: h})
		taken := b.enqueue(t, jobs.EnqueueParams{Kind: "k"})
		kept := b.enqueue(t, jobs.EnqueueParams{Kind: "k"})
		<-h.started
		<-h.started
		_, err := b.db.Bun().NewRaw("UPDATE jobs SET lease_owner = 'other-process' WHERE id = ?", taken).Exec(context.Background())
		require.NoError(t, err)
		live.returned <- struct{}{}
		require.Eventually(t, func() bool { return h.cause(taken) != nil }, 10*time.Second, 5*time.Millisecond,
			"the job another process took is cancelled")
		require.ErrorIs(t, h.cause(taken), runner.ErrLeaseLost)
		require.NoError(t, h.cause(kept), "the job still held runs on")
	})
}

// deadWorkers is the store whose RescueDeadWorkers the test watches.
type deadWorkers struct {
	store.JobQueue
	calls atomic.Int32
}

func (d *deadWorkers) RescueDeadWorkers(ctx context.Context, now time.Time) (int, int, error) {
	d.calls.Add(1)
	return d.JobQueue.RescueDeadWorkers(ctx, now)
}

// A death told by the liveness makes the runner rescue the dead
// processes' jobs at once, not at its next rescue interval.
func TestDeathRescuesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	live := newFakeLiveness()
	q := &deadWorkers{JobQueue: b.db.JobQueue()}
	b.startOn(t, q, runner.Config{Liveness: live, RescueInterval: time.Hour}, runner.Kind{Name: "k", Handler: newBlocking()})
	require.Eventually(t, func() bool { return q.calls.Load() == 1 }, 10*time.Second, 5*time.Millisecond, "the rescue at start")
	live.deaths <- struct{}{}
	require.Eventually(t, func() bool { return q.calls.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
}
