// Package cron measures the cron scheduler (issue 8): how precisely it
// makes calls at their slots (S4) and how fast it gets through a minute at
// which every job is due (S5), with one and with three schedulers.
//
// The schedulers run in the bench process, each with its own connection
// pool, as replicas each have theirs; they call a local HTTP server, also
// in the process, through the SSRF-guarded client the server uses (with
// 127.0.0.1 allowed). Jobs are written straight into the table with their
// next run set, so a slice can spread slots at any spacing; the
// scheduler then treats them as any job whose next run has come.
package cron

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// jobRow is a cron_jobs row, for seeding many at once.
type jobRow struct {
	bun.BaseModel `bun:"table:cron_jobs"`
	ID            string `bun:"id,pk"`
	AccountID     string `bun:"account_id"`
	EndpointURL   string `bun:"endpoint_url"`
	Method        string `bun:"method"`
	Headers       string `bun:"headers"`
	Frequency     string `bun:"frequency"`
	TimeOfDay     string `bun:"time_of_day"`
	Timezone      string `bun:"timezone"`
	Status        string `bun:"status"`
	NextRunAt     int64  `bun:"next_run_at"`
	CreatedAt     int64  `bun:"created_at"`
}

// rig is the schedulers, their database and the endpoint they call.
type rig struct {
	db      *store.DB
	scheds  []*appcron.Scheduler
	account string
	url     string
	arrived *arrivals
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
	url, err := env.ScenarioDatabaseURL(ctx)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	acc := account.Account{ID: ident.New(ident.Account), Name: "bench", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := db.Repos().InsertAccount(ctx, acc); err != nil {
		return nil, err
	}
	r := &rig{db: db, account: acc.ID, arrived: &arrivals{at: map[string]time.Time{}}}

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

	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range replicas {
		rdb, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			cancel()
			return nil, err
		}
		s := appcron.NewScheduler(appcron.SchedulerConfig{
			Store:  store.Bind(rdb, func(r *store.Repos) appcron.Repos { return r }),
			Parser: cronexpr.New(), Caller: guard.NewCronCaller(), Logger: env.Log,
		})
		r.scheds = append(r.scheds, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Run(runCtx)
		}()
		env.AfterScenario(func() { _ = rdb.Close() })
	}
	env.AfterScenario(func() {
		cancel()
		wg.Wait()
	})
	return r, nil
}

// seed writes jobs with the given next runs, in one transaction: daily
// jobs whose own time is twelve hours away, so each runs once in the
// bench. It returns when they were committed: a slot before that cannot be
// met, so lateness counts from the later of the two.
func (r *rig) seed(ctx context.Context, slots []time.Time) ([]string, time.Time, error) {
	ids := make([]string, len(slots))
	rows := make([]jobRow, len(slots))
	now := time.Now()
	timeOfDay := now.UTC().Add(12 * time.Hour).Format("15:04")
	for i, slot := range slots {
		ids[i] = ident.New(ident.CronJob)
		rows[i] = jobRow{ID: ids[i], AccountID: r.account, EndpointURL: r.url, Method: "GET", Headers: "{}",
			Frequency: "daily", TimeOfDay: timeOfDay, Timezone: "UTC", Status: "active",
			NextRunAt: slot.UnixMicro(), CreatedAt: now.UnixMicro()}
	}
	err := r.db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += 1000 {
			chunk := rows[start:min(start+1000, len(rows))]
			if _, err := tx.NewInsert().Model(&chunk).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("seed cron jobs: %w", err)
	}
	committed := time.Now()
	// As the API does on create: the replica that took the request wakes.
	r.scheds[0].Wake()
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
	var n int
	err := r.db.Bun().NewRaw("SELECT COUNT(*) FROM cron_executions WHERE status IN ('success', 'failed')").Scan(ctx, &n)
	return n, err
}

func (r *rig) remove(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += 1000 {
		chunk := ids[start:min(start+1000, len(ids))]
		if _, err := r.db.Bun().NewRaw("DELETE FROM cron_jobs WHERE id IN (?)", bun.List(chunk)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
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
		slots := make([]time.Time, n)
		for i := range slots {
			slots[i] = base.Add(time.Duration(i) * d / time.Duration(n))
		}
		ids, committed, err := r.seed(ctx, slots)
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
				s.Latencies = append(s.Latencies, max(t.Sub(later(slots[i], committed)), 0))
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
		return s, r.remove(ctx, ids)
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
		slot := time.Now().Add(b.Lead)
		slots := make([]time.Time, b.Jobs)
		for i := range slots {
			slots[i] = slot
		}
		ids, committed, err := r.seed(ctx, slots)
		if err != nil {
			return harness.Sample{}, err
		}
		// On a busy machine the seeding may end after the slot: the jobs
		// are due from when they exist.
		slot = later(slot, committed)
		deadline := slot.Add(b.Timeout)
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
		s := harness.Sample{Elapsed: done.Sub(slot)}
		if rec == b.Jobs && !allCalled.IsZero() {
			s.Ops = 1
			s.Latencies = []time.Duration{done.Sub(slot)}
			called = append(called, float64(allCalled.Sub(slot).Microseconds())/1000)
		} else {
			s.Failed, s.FirstFailure = 1, fmt.Sprintf("%d of %d executions recorded after %s", rec, b.Jobs, b.Timeout)
		}
		return s, r.remove(ctx, ids)
	}, nil
}
