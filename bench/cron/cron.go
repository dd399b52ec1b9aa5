// Package cron measures the cron scheduler (issue 8) through the server binary:
// how precisely it makes calls at their slots (S4) and how fast it gets through
// a minute at which every job is due (S5), with one and with three replicas.
//
// The replicas are `switchboard serve` processes on one deployment's database,
// each with its own pool and its own scheduler, as replicas are; they share the
// due jobs through the database and call a local HTTP server in the bench
// process, which they may reach with harness.AllowLoopback. Their calls are not
// bounded per account (--job-account-share 1): every job is the bench
// account's. Jobs are written straight into the table with SQL (harness.SQL)
// with their next run set, so a slice can spread slots at any spacing (the API's
// finest schedule is a minute); the schedulers then treat them as any job whose
// next run has come. After writing them the bench resumes an active job through
// the first replica's API, which wakes its scheduler as creating a job does; the
// others find the jobs when they next look. Writing the jobs with SQL makes the
// cron scenarios Postgres scenarios.
package cron

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// rig is the replicas, their database and the endpoint they call.
type rig struct {
	db      *harness.SQL
	servers []*harness.Switchboard
	url     string
	arrived *arrivals
	// waker is the active job whose resume wakes the first replica's scheduler.
	waker string
	// next numbers the next job seeded.
	next int
}

// arrivals notes when each job's first call reached the endpoint.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) note(jobID string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, seen := a.at[jobID]; !seen {
		a.at[jobID] = t
	}
}

func (a *arrivals) take(ids []string) (map[string]time.Time, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if t, ok := a.at[id]; ok {
			out[id] = t
			delete(a.at, id)
		}
	}
	return out, len(out)
}

// count is how many jobs have been called since the last take; slices
// run one at a time and take all their jobs, so these are the slice's.
func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

func setup(ctx context.Context, env *harness.Env, replicas int) (*rig, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	r := &rig{db: db, arrived: &arrivals{at: map[string]time.Time{}}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		jobID, _, _ := strings.Cut(req.Header.Get("Idempotency-Key"), ":")
		r.arrived.note(jobID, now)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	env.AfterScenario(func() { _ = srv.Close() })
	r.url = "http://" + ln.Addr().String() + "/hook"

	for range replicas {
		sb, err := d.Serve(ctx, append(harness.AllowLoopback, "--job-account-share", "1")...)
		if err != nil {
			return nil, err
		}
		r.servers = append(r.servers, sb)
	}
	var waker struct {
		ID string `json:"id"`
	}
	first := r.servers[0]
	if err := harness.PostJSON(ctx, first.URL+"/v1/cron-jobs", first.Header(), map[string]any{
		"endpoint_url": r.url, "frequency": "daily", "time": timeOfDay(), "timezone": "UTC", "method": "GET",
	}, &waker); err != nil {
		return nil, fmt.Errorf("create the waking job: %w", err)
	}
	r.waker = waker.ID
	return r, nil
}

// timeOfDay is the time of day, in UTC, twelve hours from now: daily jobs at it
// run once in the bench, at the slot it seeds.
func timeOfDay() string { return time.Now().UTC().Add(12 * time.Hour).Format("15:04") }

// slot is the i-th of n slots spread evenly over d from base; slotSQL is the same
// in unix microseconds, of the SQL integer expression i.
func slot(base time.Time, d time.Duration, i, n int) time.Time {
	return base.Add(time.Duration(i) * d / time.Duration(n))
}

func slotSQL(base time.Time, d time.Duration, i string, n int) string {
	return fmt.Sprintf("(%d + (%s)::bigint * %d / %d) / 1000", base.UnixNano(), i, d.Nanoseconds(), n)
}

// seed writes n jobs whose next runs are the slots of slot(base, spread, i, n), in
// one statement: daily jobs whose own time is twelve hours away, so each runs
// once in the bench. It returns their ids and when they were committed: a slot
// before that cannot be met, so lateness counts from the later of the two.
func (r *rig) seed(ctx context.Context, base time.Time, spread time.Duration, n int) ([]string, time.Time, error) {
	first := r.next
	r.next += n
	id := "'crn_' || lpad(k::text, 26, 'a')"
	err := r.db.Exec(ctx, fmt.Sprintf(`
		INSERT INTO cron_jobs (id, account_id, endpoint_url, method, headers, frequency, time_of_day, timezone,
			status, next_run_at, created_at)
		SELECT %s, %s, %s, 'GET', '{}', 'daily', %s, 'UTC', 'active', %s, %d
		FROM generate_series(%d, %d) AS k`,
		id, harness.Quote(r.servers[0].AccountID), harness.Quote(r.url), harness.Quote(timeOfDay()),
		slotSQL(base, spread, fmt.Sprintf("k - %d", first), n), time.Now().UnixMicro(), first, first+n-1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("seed cron jobs: %w", err)
	}
	committed := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "crn_" + strings.Repeat("a", 26-len(fmt.Sprint(first+i))) + fmt.Sprint(first+i)
	}
	// As the API does on create: the replica that took the request wakes.
	sb := r.servers[0]
	if err := harness.CallAPI(ctx, http.MethodPost, sb.URL+"/v1/cron-jobs/"+r.waker+"/resume", sb.Header(), nil, nil); err != nil {
		return nil, time.Time{}, fmt.Errorf("wake the scheduler: %w", err)
	}
	return ids, committed, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// recorded counts finished executions; the table holds only the current
// slice's, since each slice removes its jobs (and so their executions).
func (r *rig) recorded(ctx context.Context) (int, error) {
	return r.db.Int(ctx, "SELECT count(*) FROM cron_executions WHERE status IN ('success', 'failed')")
}

// remove deletes the slice's jobs, and with them their executions.
func (r *rig) remove(ctx context.Context) error {
	return r.db.Exec(ctx, "DELETE FROM cron_jobs WHERE id <> "+harness.Quote(r.waker))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Precision is S4: JobsPerMinute jobs with slots spread evenly over time
// (a slice of d gets d's share, so twelve 5 s slices are one minute of
// them); each call's lateness is its arrival at the endpoint minus its
// slot (or minus the jobs' commit, for a slot the seeding overran).
type Precision struct {
	Replicas      int
	JobsPerMinute int
	// Lead is how far ahead of the first slot the jobs are written.
	Lead time.Duration
}

// Setup starts the schedulers and returns the slice.
func (p Precision) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	r, err := setup(ctx, env, p.Replicas)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d time.Duration) (harness.Sample, error) {
		n := max(1, int(float64(p.JobsPerMinute)*d.Seconds()/60))
		base := time.Now().Add(p.Lead)
		ids, committed, err := r.seed(ctx, base, d, n)
		if err != nil {
			return harness.Sample{}, err
		}
		start := time.Now()
		deadline := base.Add(d + 10*time.Second)
		for r.arrived.count() < n && time.Now().Before(deadline) {
			if err := sleep(ctx, 10*time.Millisecond); err != nil {
				return harness.Sample{}, err
			}
		}
		got, ok := r.arrived.take(ids)
		s := harness.Sample{Ops: ok, Failed: n - ok, Elapsed: time.Since(start)}
		for i, id := range ids {
			if t, ok := got[id]; ok {
				s.Latencies = append(s.Latencies, max(t.Sub(later(slot(base, d, i, n), committed)), 0))
			}
		}
		if s.Failed > 0 {
			s.FirstFailure = fmt.Sprintf("%d of %d jobs were not called within 10 s of the slice's end", s.Failed, n)
		}
		for time.Now().Before(deadline) {
			if rec, err := r.recorded(ctx); err != nil || rec == n {
				break
			}
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return harness.Sample{}, err
			}
		}
		return s, r.remove(ctx)
	}, nil
}

// Burst is S5: Jobs jobs due at the same instant; the slice's one latency
// is the time from that instant until every call has been made and its
// execution recorded.
type Burst struct {
	Replicas int
	Jobs     int
	Lead     time.Duration
	// Timeout bounds a slice's wait.
	Timeout time.Duration
}

// Setup starts the schedulers and returns the slice.
func (b Burst) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	r, err := setup(ctx, env, b.Replicas)
	if err != nil {
		return nil, err
	}
	var called []float64
	env.AfterRounds(func(context.Context, harness.Rounds) []harness.Figure {
		if len(called) == 0 {
			return nil
		}
		worst := 0.0
		for _, c := range called {
			worst = max(worst, c)
		}
		return []harness.Figure{{Name: "all called (worst slice, warm-up included)", Value: worst, Unit: "ms",
			Detail: "from the slot until the last of the jobs' calls reached the endpoint"}}
	})
	return func(ctx context.Context, _ time.Duration) (harness.Sample, error) {
		due := time.Now().Add(b.Lead)
		ids, committed, err := r.seed(ctx, due, 0, b.Jobs)
		if err != nil {
			return harness.Sample{}, err
		}
		// On a busy machine the seeding may end after the slot: the jobs
		// are due from when they exist.
		due = later(due, committed)
		deadline := due.Add(b.Timeout)
		var allCalled time.Time
		rec := 0
		for time.Now().Before(deadline) {
			if allCalled.IsZero() && r.arrived.count() == b.Jobs {
				allCalled = time.Now()
			}
			if !allCalled.IsZero() {
				if rec, err = r.recorded(ctx); err != nil {
					return harness.Sample{}, err
				}
				if rec == b.Jobs {
					break
				}
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return harness.Sample{}, err
			}
		}
		done := time.Now()
		r.arrived.take(ids)
		s := harness.Sample{Elapsed: done.Sub(due)}
		if rec == b.Jobs && !allCalled.IsZero() {
			s.Ops = 1
			s.Latencies = []time.Duration{done.Sub(due)}
			called = append(called, float64(allCalled.Sub(due).Microseconds())/1000)
		} else {
			s.Failed, s.FirstFailure = 1, fmt.Sprintf("%d of %d executions recorded after %s", rec, b.Jobs, b.Timeout)
		}
		return s, r.remove(ctx)
	}, nil
}
