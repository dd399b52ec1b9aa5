package cron_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// fakeClock is a clock the test moves; timers fire when it passes them.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch, func() {}
	}
	c.waiters = append(c.waiters, fakeTimer{at: c.now.Add(d), ch: ch})
	return ch, func() {}
}

// Set moves the clock to t and fires the timers it passes.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// endpoint records the calls it receives.
type endpoint struct {
	mu    sync.Mutex
	calls []recordedCall
	srv   *httptest.Server
	// status answers each call; 200 when nil.
	status func(n int) int
	hang   chan struct{}
	// release ends the hanging calls (and makes later ones return at once).
	release func()
}

type recordedCall struct {
	path, method, key, body, contentType, token string
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{hang: make(chan struct{})}
	e.release = sync.OnceFunc(func() { close(e.hang) })
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-e.hang:
			case <-r.Context().Done():
			}
			return
		}
		buf := new(strings.Builder)
		_, _ = fmt.Fprint(buf, "")
		b := make([]byte, 4096)
		n, _ := r.Body.Read(b)
		e.mu.Lock()
		e.calls = append(e.calls, recordedCall{path: r.URL.Path, method: r.Method, key: r.Header.Get("Idempotency-Key"),
			body: string(b[:n]), contentType: r.Header.Get("Content-Type"), token: r.Header.Get("X-Token")})
		count := len(e.calls)
		e.mu.Unlock()
		status := 200
		if e.status != nil {
			status = e.status(count)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"call":%d}`, count)
	}))
	t.Cleanup(func() {
		e.release()
		e.srv.Close()
	})
	return e
}

func (e *endpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

func (e *endpoint) snapshot() []recordedCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]recordedCall(nil), e.calls...)
}

// bundle is the cron use cases and one or more replicas (an enqueuer, the
// runs' handler and a job runner each) on one SQLite store in a temporary
// file, calling a local endpoint, on a clock the test moves. The tests of
// processes sharing a database, killed and restarted, are in
// process_test.go and fault_test.go.
type bundle struct {
	svc      *appcron.Service
	db       *store.DB
	store    appcron.Store
	clock    *fakeClock
	ep       *endpoint
	account  string
	replicas []*cronReplica
}

func loopback() *httpguard.Guard {
	return httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
}

type options struct {
	replicas     int
	batch        int
	start        time.Time
	concurrency  int
	accountShare float64
	// dialect is the store's database; SQLite when empty.
	dialect store.Dialect
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	if o.replicas == 0 {
		o.replicas = 1
	}
	if o.start.IsZero() {
		o.start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	}
	clock := newFakeClock(o.start)
	if o.dialect == "" {
		o.dialect = store.SQLite
	}
	db := dbtest.Open(t, o.dialect)
	accountID := insertAccount(t, db, o.start)
	b := &bundle{clock: clock, ep: newEndpoint(t), db: db, store: db.CronStore(), account: accountID}
	for i := range o.replicas {
		r, err := startReplica(replicaConfig{db: db, store: b.store, clock: clock, batch: o.batch, enqueuePoll: time.Hour,
			workers: o.concurrency, share: o.accountShare, retryBackoff: func(int) time.Duration { return 10 * time.Second }})
		require.NoError(t, err)
		b.replicas = append(b.replicas, r)
		if i == 0 {
			b.svc = appcron.NewService(appcron.Deps{Store: b.store, Parser: parser, URLs: loopback(), Now: clock.Now, Wake: r.enq.Wake})
		}
		t.Cleanup(r.stop)
	}
	return b
}

// advance moves the clock and wakes every enqueuer (the runners poll).
func (b *bundle) advance(t time.Time) {
	b.clock.Set(t)
	for _, r := range b.replicas {
		r.enq.Wake()
	}
}

// allExecutions reads every execution of every job, in any state (the
// ports show finished ones only), ordered by job and slot.
func (b *bundle) allExecutions(t *testing.T) []cron.Execution {
	t.Helper()
	var rows []struct {
		JobID               string        `bun:"job_id"`
		Slot                int64         `bun:"slot"`
		Status              string        `bun:"status"`
		Error               string        `bun:"error"`
		Attempt             int           `bun:"attempt"`
		InterruptedAttempts int           `bun:"interrupted_attempts"`
		CallStartedAt       sql.NullInt64 `bun:"call_started_at"`
	}
	require.NoError(t, b.db.Bun().NewRaw("SELECT job_id, slot, status, error, attempt, interrupted_attempts, call_started_at FROM cron_executions ORDER BY job_id, slot, id").
		Scan(context.Background(), &rows))
	out := make([]cron.Execution, len(rows))
	for i, r := range rows {
		out[i] = cron.Execution{JobID: r.JobID, Slot: time.UnixMicro(r.Slot).UTC(), Status: cron.ExecutionStatus(r.Status), Error: r.Error,
			Attempt: r.Attempt, InterruptedAttempts: r.InterruptedAttempts}
		if r.CallStartedAt.Valid {
			at := time.UnixMicro(r.CallStartedAt.Int64).UTC()
			out[i].CallStartedAt = &at
		}
	}
	return out
}

// sqliteCron opens a migrated SQLite store in a temporary file with one
// account, closed when the test ends.
func sqliteCron(t *testing.T, created time.Time) (*store.DB, string) {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	return db, insertAccount(t, db, created)
}

// insertAccount stores a new account and returns its id.
func insertAccount(t *testing.T, db *store.DB, created time.Time) string {
	t.Helper()
	acc := account.Account{ID: ident.New(ident.Account), Name: "Acme", CreatedAt: created, UpdatedAt: created}
	require.NoError(t, db.AccountStore().InsertAccount(context.Background(), acc))
	return acc.ID
}

// finished counts the executions that are no longer running.
func (b *bundle) finished(t *testing.T) int {
	t.Helper()
	n := 0
	for _, e := range b.allExecutions(t) {
		if e.Status != cron.Running {
			n++
		}
	}
	return n
}

// waitFinished waits until n executions are finished.
func (b *bundle) waitFinished(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := b.finished(t)
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("%d finished executions, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle gives the schedulers a moment to (wrongly) do more, for checks
// that nothing else happens.
func (b *bundle) settle() { time.Sleep(150 * time.Millisecond) }

func (b *bundle) create(t *testing.T, j cron.Job) cron.Job {
	t.Helper()
	if j.EndpointURL == "" {
		j.EndpointURL = b.ep.srv.URL + "/hook"
	}
	if j.Method == "" {
		j.Method = "POST"
	}
	got, err := b.svc.Create(context.Background(), b.account, j, nil)
	require.NoError(t, err)
	return got
}

func (b *bundle) slots(t *testing.T, jobID string) []string {
	t.Helper()
	execs, _, err := b.svc.Executions(context.Background(), b.account, appcron.ExecutionQuery{JobID: jobID, Limit: 100})
	require.NoError(t, err)
	var out []string
	for _, e := range execs {
		out = append(out, e.Slot.UTC().Format(time.RFC3339))
	}
	sort.Strings(out)
	return out
}

func intp(v int) *int { return &v }

// TestTimeTravel runs every frequency through DST changes and short months
// on the moved clock, step by step from one next run to the next, and
// checks the slots that were called.
func TestTimeTravel(t *testing.T) {
	t.Parallel()
	b := setup(t, options{start: time.Date(2026, 2, 26, 0, 0, 0, 0, time.UTC)})
	jobs := map[string]cron.Job{
		"ny-daily-gap":      b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "02:30", Timezone: "America/New_York"}}),
		"london-daily-gap":  b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}}),
		"lordhowe-weekly":   b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Weekly, Time: "02:15", Timezone: "Australia/Lord_Howe", DayOfWeek: intp(0)}}),
		"monthly-31":        b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Monthly, Time: "10:00", Timezone: "America/New_York", DayOfMonth: intp(31)}}),
		"custom-ny-weekday": b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Custom, Timezone: "America/New_York", CustomSchedule: "30 2 * * 0,1"}}),
	}
	end := time.Date(2026, 4, 12, 0, 0, 0, 0, time.UTC)
	done := 0
	for {
		at, ok, err := b.store.Repos().NextWake(context.Background())
		require.NoError(t, err)
		require.True(t, ok)
		if at.After(end) {
			break
		}
		due := 0
		for _, j := range jobs {
			got, err := b.store.Repos().Job(context.Background(), b.account, j.ID)
			require.NoError(t, err)
			if !got.NextRunAt.After(at) {
				due++
			}
		}
		b.advance(at)
		done += due
		b.waitFinished(t, done)
	}
	want := map[string][]string{
		// 2026-03-08: 02:30 does not exist in New York; the run is at 03:00 EDT (07:00Z).
		"ny-daily-gap": nil,
		// 2026-03-29: 01:30 does not exist in London; the run is at 02:00 BST (01:00Z).
		"london-daily-gap": nil,
		// Lord Howe leaves DST (+11 → +10:30) on 2026-04-05.
		"lordhowe-weekly": {"2026-02-28T15:15:00Z", "2026-03-07T15:15:00Z", "2026-03-14T15:15:00Z", "2026-03-21T15:15:00Z", "2026-03-28T15:15:00Z", "2026-04-04T15:45:00Z", "2026-04-11T15:45:00Z"},
		// February has no 31st: the run is on the 28th.
		"monthly-31":        {"2026-02-28T15:00:00Z", "2026-03-31T14:00:00Z"},
		"custom-ny-weekday": {"2026-03-01T07:30:00Z", "2026-03-02T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-15T06:30:00Z", "2026-03-16T06:30:00Z", "2026-03-22T06:30:00Z", "2026-03-23T06:30:00Z", "2026-03-29T06:30:00Z", "2026-03-30T06:30:00Z", "2026-04-05T06:30:00Z", "2026-04-06T06:30:00Z"},
	}
	ny := b.slots(t, jobs["ny-daily-gap"].ID)
	require.Len(t, ny, 45)
	require.Contains(t, ny, "2026-03-07T07:30:00Z")
	require.Contains(t, ny, "2026-03-08T07:00:00Z", "the gap day runs at the jump")
	require.Contains(t, ny, "2026-03-09T06:30:00Z")
	london := b.slots(t, jobs["london-daily-gap"].ID)
	require.Len(t, london, 45)
	require.Contains(t, london, "2026-03-28T01:30:00Z")
	require.Contains(t, london, "2026-03-29T01:00:00Z", "the gap day runs at the jump")
	require.Contains(t, london, "2026-03-30T00:30:00Z")
	for name, slots := range want {
		if slots == nil {
			continue
		}
		require.Equal(t, slots, b.slots(t, jobs[name].ID), name)
	}
	// Every call carried the slot's idempotency key, once.
	keys := map[string]bool{}
	for _, c := range b.ep.snapshot() {
		require.False(t, keys[c.key], "key %s used twice", c.key)
		keys[c.key] = true
	}
	require.Len(t, keys, done)
}

// TestFallBackRunsOnce: a daily job inside the repeated hour of a
// fall-back night runs once that night, on every zone of the table.
func TestFallBackRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, options{start: time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC)})
	ny := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "America/New_York"}})
	london := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}})
	// Walk minute by minute over both nights.
	n := 0
	for at := b.clock.Now(); at.Before(time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)); at = at.Add(15 * time.Minute) {
		b.advance(at)
		if at.Equal(time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)) || at.Equal(time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)) {
			n++
			b.waitFinished(t, n)
		}
	}
	b.settle()
	londonSlots := b.slots(t, london.ID)
	require.Contains(t, londonSlots, "2026-10-25T00:30:00Z")
	require.NotContains(t, londonSlots, "2026-10-25T01:30:00Z")
	nySlots := b.slots(t, ny.ID)
	require.Contains(t, nySlots, "2026-11-01T05:30:00Z")
	require.NotContains(t, nySlots, "2026-11-01T06:30:00Z")
	require.Equal(t, len(londonSlots)+len(nySlots), b.ep.count())
}

// TestExactlyOnceAcrossReplicas: three schedulers on one store; 200 jobs
// every minute for 10 minutes. Every slot is called once: calls =
// executions = slots. (TestExactlyOnceAcrossProcesses holds processes on
// one Postgres database to the same.)
func TestExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	b := setup(t, options{replicas: 3, batch: 25, start: start})
	const jobs, minutes = 200, 10
	for range jobs {
		b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Custom, Timezone: "UTC", CustomSchedule: "* * * * *"}})
	}
	for m := 1; m <= minutes; m++ {
		b.advance(start.Add(time.Duration(m)*time.Minute - 30*time.Second))
		b.waitFinished(t, jobs*m)
	}
	b.settle()
	calls := b.ep.snapshot()
	require.Len(t, calls, jobs*minutes, "calls")
	keys := map[string]int{}
	for _, c := range calls {
		keys[c.key]++
	}
	require.Len(t, keys, jobs*minutes, "distinct slots called")
	for k, n := range keys {
		require.Equal(t, 1, n, "slot %s called %d times", k, n)
	}
	rows, slots := 0, map[string]bool{}
	for _, e := range b.allExecutions(t) {
		if e.Status == cron.Success {
			rows++
			slots[cron.IdempotencyKey(e.JobID, e.Slot)] = true
		}
	}
	require.Equal(t, jobs*minutes, rows, "execution rows")
	require.Len(t, slots, jobs*minutes, "distinct slots recorded")
}

func TestPauseResumeAndPatch(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start})
	ctx := context.Background()
	every := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Custom, Timezone: "UTC", CustomSchedule: "*/10 * * * *"}})
	b.advance(start.Add(10 * time.Minute))
	b.waitFinished(t, 1)

	paused, err := b.svc.Pause(ctx, b.account, every.ID)
	require.NoError(t, err)
	require.Nil(t, paused.NextRunAt)
	b.advance(start.Add(20 * time.Minute))
	b.settle()
	require.Equal(t, 1, b.ep.count(), "a paused job is not called")

	b.clock.Set(start.Add(25 * time.Minute))
	resumed, err := b.svc.Resume(ctx, b.account, every.ID)
	require.NoError(t, err)
	require.Equal(t, start.Add(30*time.Minute), resumed.NextRunAt.UTC(), "resume counts from now")
	b.advance(start.Add(30 * time.Minute))
	b.waitFinished(t, 2)
	require.Equal(t, []string{"2026-06-01T08:10:00Z", "2026-06-01T08:30:00Z"}, b.slots(t, every.ID))

	// PATCH moves the next call: 09:00 daily becomes 09:45.
	daily := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "UTC"}})
	_, err = b.svc.Pause(ctx, b.account, every.ID)
	require.NoError(t, err)
	moved, err := b.svc.Update(ctx, b.account, daily.ID, appcron.Patch{Time: appcron.Value[string]{Set: true, V: "09:45"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 9, 45, 0, 0, time.UTC), moved.NextRunAt.UTC())
	b.advance(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	b.settle()
	require.Equal(t, 2, b.ep.count(), "nothing at the old time")
	b.advance(time.Date(2026, 6, 1, 9, 45, 0, 0, time.UTC))
	b.waitFinished(t, 3)
	require.Equal(t, []string{"2026-06-01T09:45:00Z"}, b.slots(t, daily.ID))

	// Delete cancels what is pending.
	require.NoError(t, b.svc.Delete(ctx, b.account, daily.ID))
	b.advance(time.Date(2026, 6, 2, 9, 45, 0, 0, time.UTC))
	b.settle()
	require.Equal(t, 3, b.ep.count())
}

func TestMissedSlotsAfterDowntime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 30, 0, time.UTC)
	b := setup(t, options{start: start})
	minutely := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Custom, Timezone: "UTC", CustomSchedule: "* * * * *"}})
	daily := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Daily, Time: "08:05", Timezone: "UTC"}})
	// Down from 08:00:30 to 08:12:10: twelve minutely slots and the
	// daily slot were missed. The minutely job runs once, for 08:12;
	// the daily slot is older than the 5-minute grace and is skipped.
	b.advance(time.Date(2026, 6, 1, 8, 12, 10, 0, time.UTC))
	b.waitFinished(t, 1)
	b.settle()
	require.Equal(t, []string{"2026-06-01T08:12:00Z"}, b.slots(t, minutely.ID))
	require.Empty(t, b.slots(t, daily.ID))
	got, err := b.svc.Get(context.Background(), b.account, daily.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 2, 8, 5, 0, 0, time.UTC), got.Job.NextRunAt.UTC())
	got, err = b.svc.Get(context.Background(), b.account, minutely.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 8, 13, 0, 0, time.UTC), got.Job.NextRunAt.UTC())
}

func TestCallAndOutcomes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start})
	ctx := context.Background()
	b.ep.status = func(n int) int {
		if n == 2 {
			return 503
		}
		return 200
	}
	ok := b.create(t, cron.Job{Method: "PUT", Headers: map[string]string{"X-Token": "secret"}, Body: []byte(`{"hello":"world"}`),
		Spec: cron.Spec{Frequency: cron.Daily, Time: "08:01", Timezone: "UTC"}})
	retried := b.create(t, cron.Job{Method: "GET", Retries: 2, EndpointURL: b.ep.srv.URL + "/retry",
		Spec: cron.Spec{Frequency: cron.Daily, Time: "08:02", Timezone: "UTC"}})
	hang := b.create(t, cron.Job{EndpointURL: b.ep.srv.URL + "/hang", Timeout: time.Second,
		Spec: cron.Spec{Frequency: cron.Daily, Time: "08:03", Timezone: "UTC"}})

	b.advance(start.Add(time.Minute))
	b.waitFinished(t, 1)
	calls := b.ep.snapshot()
	require.Equal(t, "PUT", calls[0].method)
	require.Equal(t, `{"hello":"world"}`, calls[0].body)
	require.Equal(t, "application/json", calls[0].contentType)
	require.Equal(t, "secret", calls[0].token)
	require.Equal(t, cron.IdempotencyKey(ok.ID, start.Add(time.Minute)), calls[0].key)
	d, err := b.svc.Get(ctx, b.account, ok.ID)
	require.NoError(t, err)
	require.Equal(t, cron.Success, d.Last.Status)
	require.Equal(t, 200, d.Last.ResponseCode)
	require.JSONEq(t, `{"call":1}`, string(d.Last.ResponseBody))

	// 503, then a retry 10 s later that succeeds, same slot and key.
	b.advance(start.Add(2 * time.Minute))
	b.waitFinished(t, 2)
	b.advance(start.Add(2*time.Minute + 10*time.Second))
	// On a loaded machine the runners' SQLite writes can time out and back
	// off for seconds: a clean-clone CI run logged lease renewals failing
	// for up to 2.8 s, and saw no retry within 10 s.
	deadline := time.Now().Add(30 * time.Second)
	for b.ep.count() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	b.waitFinished(t, 2)
	calls = b.ep.snapshot()
	require.Len(t, calls, 3)
	require.Equal(t, calls[1].key, calls[2].key, "a retry keeps the slot's key")
	var last cron.Execution
	for time.Now().Before(deadline) {
		d, err = b.svc.Get(ctx, b.account, retried.ID)
		require.NoError(t, err)
		if d.Last != nil {
			last = *d.Last
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, cron.Success, last.Status)
	require.Equal(t, 2, last.Attempt)

	// A hanging endpoint is failed at the job's timeout.
	b.advance(start.Add(3 * time.Minute))
	b.waitFinished(t, 3)
	d, err = b.svc.Get(ctx, b.account, hang.ID)
	require.NoError(t, err)
	require.Equal(t, cron.Failed, d.Last.Status)
	require.Contains(t, d.Last.Error, "timeout")
	require.GreaterOrEqual(t, d.Last.ResponseTimeMs, int64(1000))
}

// An account whose cron endpoints hang holds at most its share of the
// calls in flight: another account's call is made while they hang.
func TestHangingAccountLeavesCronCallsForOthers(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start, concurrency: 4, accountShare: 0.5})
	t.Cleanup(b.ep.release) // before the schedulers stop, which waits for their calls
	ctx := context.Background()
	every := cron.Spec{Frequency: cron.Custom, CustomSchedule: "* * * * *", Timezone: "UTC"}
	for range 6 {
		b.create(t, cron.Job{EndpointURL: b.ep.srv.URL + "/hang", Timeout: time.Minute, Spec: every})
	}
	b.advance(start.Add(time.Minute))
	time.Sleep(100 * time.Millisecond) // A's calls start and hang

	other := insertAccount(t, b.db, start)
	_, err := b.svc.Create(ctx, other, cron.Job{EndpointURL: b.ep.srv.URL + "/hook", Method: "POST", Spec: every}, nil)
	require.NoError(t, err)
	b.advance(start.Add(2 * time.Minute))
	require.Eventually(t, func() bool { return b.ep.count() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the other account's call is made while A's hang (their timeout is a minute)")
}

// An account whose calls fill its share leaves its further runs in the
// queue, holding no worker; a run still waiting when its job's next run
// has come and its slot is past the grace period is recorded as not
// made, as a run missed in downtime is, so the waiting runs cannot grow.
func TestHangingAccountsExtraRunsAreNotMade(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start, concurrency: 4, accountShare: 0.5})
	t.Cleanup(b.ep.release)
	every := cron.Spec{Frequency: cron.Custom, CustomSchedule: "* * * * *", Timezone: "UTC"}
	for range 5 {
		b.create(t, cron.Job{EndpointURL: b.ep.srv.URL + "/hang", Timeout: time.Second, Spec: every})
	}
	notMade := func() int {
		n := 0
		for _, e := range b.allExecutions(t) {
			if e.Status == cron.Failed && e.Error == appcron.AccountBusyNote {
				n++
			}
		}
		return n
	}
	// Three calls hang (a lone account borrows all but a reserve of the
	// 4 workers), two wait in the queue.
	b.advance(start.Add(time.Minute))
	require.Eventually(t, func() bool {
		n := 0
		for _, e := range b.allExecutions(t) {
			if e.CallStartedAt != nil {
				n++
			}
		}
		return n == 3
	}, 10*time.Second, 5*time.Millisecond)
	b.settle()
	require.Zero(t, notMade())
	// Their next run and the grace period (5 minutes) pass while they
	// wait; once the hanging calls time out, the two are taken and
	// recorded as not made.
	b.advance(start.Add(7 * time.Minute))
	require.Eventually(t, func() bool { return notMade() == 2 }, 10*time.Second, 5*time.Millisecond)
	b.settle()
	require.Equal(t, 2, notMade(), "only the runs that waited past their next slot")
}
