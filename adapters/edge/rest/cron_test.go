package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
)

// cronClock is a clock the cron tests move.
type cronClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *cronClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *cronClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// After fires at once: the enqueuer then polls the moved clock.
func (c *cronClock) After(time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	go func() {
		time.Sleep(2 * time.Millisecond)
		ch <- c.Now()
	}()
	return ch, func() {}
}

// cronBundle is the real HTTP interface over the account and cron use
// cases, a fresh database and a running enqueuer and runner on a moved
// clock.
type cronBundle struct {
	client  *openapitest.Client
	db      *store.DB
	clock   *cronClock
	key     string
	secret  string
	oKey    string
	oSecret string
	target  *httptest.Server
}

type cronOptions struct {
	maxJobs      int
	privateGuard bool
}

func setupCron(t *testing.T, dialect store.Dialect, o cronOptions) *cronBundle {
	t.Helper()
	ctx := context.Background()
	clock := &cronClock{now: time.Date(2026, 7, 1, 8, 0, 0, 0, time.UTC)}
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	_, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, oCred, err := acc.CreateAccount(ctx, "Other")
	require.NoError(t, err)

	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if o.privateGuard {
		guard = httpguard.New(httpguard.Options{})
	}
	cronStore := db.CronStore()
	enq := appcron.NewEnqueuer(appcron.EnqueuerConfig{Store: cronStore, Parser: cronexpr.New(), Clock: clock, Logger: quiet})
	svc := appcron.NewService(appcron.Deps{Store: cronStore, Parser: cronexpr.New(), URLs: guard, Now: clock.Now, MaxJobsPerAccount: o.maxJobs, Wake: enq.Wake})
	worker := appcron.NewWorker(appcron.WorkerConfig{Store: cronStore, Caller: guard.NewCronCaller(), Clock: clock, Logger: quiet})
	runs, err := runner.New(db.JobQueue(), db, runner.Config{Now: clock.Now, PollInterval: 10 * time.Millisecond, WorkerID: worker.Owner(), Logger: quiet},
		runner.Kind{Name: appcron.RunKind, Handler: worker, Lease: 3 * time.Second})
	require.NoError(t, err)
	require.NoError(t, runs.Start(ctx))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		enq.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = runs.Stop(ctx)
	})

	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(db.IdempotencyKeys(), 0, nil, quiet), Ready: db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited,
	}, rest.Deps{Accounts: acc, Cron: svc})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("broken"))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"method":"` + r.Method + `"}`))
		}
	}))
	t.Cleanup(target.Close)
	return &cronBundle{client: openapitest.New(t, srv.URL), db: db, clock: clock,
		key: cred.Key, secret: cred.Secret, oKey: oCred.Key, oSecret: oCred.Secret, target: target}
}

func (b *cronBundle) bearer() []string { return []string{"Authorization", "Bearer " + b.key} }

func (b *cronBundle) do(method, path string, body any) openapitest.Response {
	return b.client.Do(method, path, body, b.bearer()...)
}

func (b *cronBundle) job(extra map[string]any) map[string]any {
	j := map[string]any{
		"endpoint_url": b.target.URL + "/hook", "frequency": "daily", "time": "09:30",
		"timezone": "Europe/London", "method": "POST",
	}
	for k, v := range extra {
		j[k] = v
	}
	return j
}

// create makes a job, a second after the one before, so the list order
// (oldest first) is known.
func (b *cronBundle) create(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	b.clock.Set(b.clock.Now().Add(time.Second))
	r := b.do(http.MethodPost, "/v1/cron-jobs", b.job(extra))
	require.Equal(t, http.StatusCreated, r.StatusCode, "create: %s", r.Body)
	return r.JSON(t)
}

func requireCronError(t *testing.T, r openapitest.Response, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.StatusCode, "body: %s", r.Body)
	e, ok := r.JSON(t)["error"].(map[string]any)
	require.True(t, ok, "cron error envelope: %s", r.Body)
	require.Equal(t, code, e["code"], "body: %s", r.Body)
	return e
}

func TestCronJobLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupCron(t, dialect, cronOptions{})
		created := b.create(t, map[string]any{"headers": map[string]any{"X-Token": "abc"}, "body": map[string]any{"hello": "world"}})
		id := created["id"].(string)
		require.True(t, strings.HasPrefix(id, "crn_"))
		require.Equal(t, "active", created["status"])
		// 08:00 UTC on 1 July is 09:00 in London; the run is at 09:30 BST.
		require.Equal(t, "2026-07-01T09:30:00+01:00", created["next_execution"])
		require.Equal(t, map[string]any{"X-Token": "abc"}, created["headers"])
		require.Equal(t, map[string]any{"hello": "world"}, created["body"])
		require.NotContains(t, created, "updated_at")
		require.EqualValues(t, 30, created["timeout_seconds"])

		// Key and secret work as well as the bearer key.
		got := b.client.Do(http.MethodGet, "/v1/cron-jobs/"+id, nil, "X-API-Key", b.key, "X-API-Secret", b.secret)
		require.Equal(t, http.StatusOK, got.StatusCode, "%s", got.Body)
		require.NotContains(t, got.JSON(t), "last_execution")

		weekly := b.create(t, map[string]any{"frequency": "weekly", "day_of_week": 0, "time": "07:00", "timezone": "America/New_York"})
		require.Equal(t, "2026-07-05T07:00:00-04:00", weekly["next_execution"])
		monthly := b.create(t, map[string]any{"frequency": "monthly", "day_of_month": 31, "time": "12:00", "timezone": "Australia/Lord_Howe"})
		require.Equal(t, "2026-07-31T12:00:00+10:30", monthly["next_execution"])
		custom := b.create(t, map[string]any{"frequency": "custom", "custom_schedule": "*/15 9-17 * * 1-5", "timezone": "Europe/London", "method": "GET"})
		delete(custom, "time")
		require.Equal(t, "2026-07-01T09:15:00+01:00", custom["next_execution"], "strictly after now (09:00 in London)")

		// List form: no headers or body; status filter; paging.
		list := b.do(http.MethodGet, "/v1/cron-jobs?limit=2&offset=1", nil)
		require.Equal(t, http.StatusOK, list.StatusCode, "%s", list.Body)
		page := list.JSON(t)
		require.Equal(t, map[string]any{"total": 4.0, "limit": 2.0, "offset": 1.0}, page["meta"])
		items := page["data"].([]any)
		require.Len(t, items, 2)
		require.Equal(t, weekly["id"], items[0].(map[string]any)["id"])
		for _, it := range items {
			require.NotContains(t, it, "headers")
			require.NotContains(t, it, "body")
		}
		clamped := b.do(http.MethodGet, "/v1/cron-jobs?limit=500", nil).JSON(t)
		require.EqualValues(t, 100, clamped["meta"].(map[string]any)["limit"])
		requireCronError(t, b.do(http.MethodGet, "/v1/cron-jobs?limit=0", nil), http.StatusBadRequest, "validation_error")
		requireCronError(t, b.do(http.MethodGet, "/v1/cron-jobs?status=done", nil), http.StatusBadRequest, "validation_error")

		// PATCH changes only what is given and recomputes the next run.
		patched := b.do(http.MethodPatch, "/v1/cron-jobs/"+id, map[string]any{"time": "08:15"})
		require.Equal(t, http.StatusOK, patched.StatusCode, "%s", patched.Body)
		p := patched.JSON(t)
		require.Equal(t, "08:15", p["time"])
		require.Equal(t, "2026-07-02T08:15:00+01:00", p["next_execution"])
		require.Equal(t, map[string]any{"hello": "world"}, p["body"])
		require.Contains(t, p, "updated_at")
		// Changing the frequency clears what only the old one used.
		p = b.do(http.MethodPatch, "/v1/cron-jobs/"+weekly["id"].(string), map[string]any{"frequency": "daily"}).JSON(t)
		require.NotContains(t, p, "day_of_week")
		require.Equal(t, "2026-07-01T07:00:00-04:00", p["next_execution"])
		e := requireCronError(t, b.do(http.MethodPatch, "/v1/cron-jobs/"+id, map[string]any{"frequency": "yearly"}), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"].(map[string]any)["frequency"].([]any)[0], "daily, weekly, monthly, custom")

		// Pause and resume, both idempotent.
		for range 2 {
			r := b.do(http.MethodPost, "/v1/cron-jobs/"+id+"/pause", nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			require.Equal(t, map[string]any{"id": id, "status": "paused", "next_execution": nil}, r.JSON(t))
		}
		paused := b.do(http.MethodGet, "/v1/cron-jobs?status=paused", nil).JSON(t)
		require.EqualValues(t, 1, paused["meta"].(map[string]any)["total"])
		for range 2 {
			r := b.do(http.MethodPost, "/v1/cron-jobs/"+id+"/resume", nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			require.Equal(t, map[string]any{"id": id, "status": "active", "next_execution": "2026-07-02T08:15:00+01:00"}, r.JSON(t))
		}

		// Delete, then it is gone.
		del := b.do(http.MethodDelete, "/v1/cron-jobs/"+id, nil)
		require.Equal(t, http.StatusOK, del.StatusCode)
		require.Equal(t, map[string]any{"id": id, "deleted": true}, del.JSON(t))
		requireCronError(t, b.do(http.MethodGet, "/v1/cron-jobs/"+id, nil), http.StatusNotFound, "not_found")
		requireCronError(t, b.do(http.MethodDelete, "/v1/cron-jobs/"+id, nil), http.StatusNotFound, "not_found")
	})
}

func TestCronJobValidation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupCron(t, dialect, cronOptions{})
		utcJob := b.create(t, map[string]any{"timezone": "UTC"})
		require.Equal(t, "2026-07-01T09:30:00+00:00", utcJob["next_execution"], "the offset is shown even when zero")
		e := requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"frequency": "hourly", "time": "25:00", "method": "PATCH", "timezone": "Nowhere"})),
			http.StatusBadRequest, "validation_error")
		details := e["details"].(map[string]any)
		require.Equal(t, []any{"frequency must be one of daily, weekly, monthly, custom"}, details["frequency"])
		for _, f := range []string{"time", "method", "timezone"} {
			require.Contains(t, details, f)
		}
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", map[string]any{}), http.StatusBadRequest, "validation_error")
		for _, f := range []string{"endpoint_url", "frequency", "time", "timezone", "method"} {
			require.Equal(t, []any{"Field required"}, e["details"].(map[string]any)[f], f)
		}
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"frequency": "weekly", "day_of_week": 9})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "day_of_week")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"frequency": "custom", "custom_schedule": "0 0 30 2 *"})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "custom_schedule")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"endpoint_url": "ftp://example.com/x"})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "endpoint_url")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"surprise": 1})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "surprise")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"day_of_month": "x"})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "day_of_month")
		requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", "{not json"), http.StatusBadRequest, "validation_error")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"timeout_seconds": 301})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "timeout_seconds")
		e = requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"method": "GET", "body": map[string]any{"a": 1}})), http.StatusBadRequest, "validation_error")
		require.Contains(t, e["details"], "body")
	})
}

func TestCronJobPrivateURLsRefused(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupCron(t, dialect, cronOptions{privateGuard: true})
		for _, u := range []string{b.target.URL + "/hook", "http://169.254.169.254/latest", "http://10.0.0.1/x", "http://localhost:9/x"} {
			e := requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(map[string]any{"endpoint_url": u})), http.StatusBadRequest, "validation_error")
			require.Contains(t, e["details"], "endpoint_url", u)
		}
	})
}

func TestCronJobAuthAndIsolation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupCron(t, dialect, cronOptions{maxJobs: 2})
		id := b.create(t, nil)["id"].(string)
		requireCronError(t, b.client.Do(http.MethodGet, "/v1/cron-jobs", nil), http.StatusUnauthorized, "unauthorized")
		requireCronError(t, b.client.Do(http.MethodGet, "/v1/cron-jobs", nil, "Authorization", "Bearer nope"), http.StatusUnauthorized, "unauthorized")
		other := []string{"Authorization", "Bearer " + b.oKey}
		for _, r := range []openapitest.Response{
			b.client.Do(http.MethodGet, "/v1/cron-jobs/"+id, nil, other...),
			b.client.Do(http.MethodPatch, "/v1/cron-jobs/"+id, map[string]any{"time": "10:00"}, other...),
			b.client.Do(http.MethodPost, "/v1/cron-jobs/"+id+"/pause", nil, other...),
			b.client.Do(http.MethodDelete, "/v1/cron-jobs/"+id, nil, other...),
			b.client.Do(http.MethodGet, "/v1/cron-jobs/"+id+"/executions", nil, other...),
			b.do(http.MethodGet, "/v1/cron-jobs/crn_doesnotexist", nil),
			b.do(http.MethodGet, "/v1/cron-jobs/nonsense", nil),
		} {
			requireCronError(t, r, http.StatusNotFound, "not_found")
		}
		list := b.client.Do(http.MethodGet, "/v1/cron-jobs", nil, other...).JSON(t)
		require.EqualValues(t, 0, list["meta"].(map[string]any)["total"])

		// The per-account limit.
		b.create(t, nil)
		requireCronError(t, b.do(http.MethodPost, "/v1/cron-jobs", b.job(nil)), http.StatusTooManyRequests, "cron_job_limit_reached")
		b.client.Do(http.MethodPost, "/v1/cron-jobs", b.job(nil), other...)

		// Idempotency-Key on create: the same request answers the same job.
		require.Equal(t, http.StatusOK, b.do(http.MethodDelete, "/v1/cron-jobs/"+id, nil).StatusCode)
		h := append(b.bearer(), "Idempotency-Key", "create-1")
		first := b.client.Do(http.MethodPost, "/v1/cron-jobs", b.job(nil), h...)
		require.Equal(t, http.StatusCreated, first.StatusCode, "%s", first.Body)
		again := b.client.Do(http.MethodPost, "/v1/cron-jobs", b.job(nil), h...)
		require.Equal(t, http.StatusCreated, again.StatusCode)
		require.Equal(t, first.JSON(t)["id"], again.JSON(t)["id"])
	})
}

func TestCronExecutionsThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupCron(t, dialect, cronOptions{})
		ok := b.create(t, map[string]any{"time": "09:01", "body": map[string]any{"n": 1}})["id"].(string)
		bad := b.create(t, map[string]any{"time": "09:01", "endpoint_url": b.target.URL + "/fail", "method": "GET"})["id"].(string)
		b.clock.Set(time.Date(2026, 7, 1, 8, 1, 0, 0, time.UTC))
		// The enqueuer and the runner poll the moved clock.
		deadline := time.Now().Add(15 * time.Second)
		var okExec, badExec map[string]any
		for time.Now().Before(deadline) && (okExec == nil || badExec == nil) {
			var n int
			require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM cron_executions WHERE status IN ('success', 'failed')").Scan(context.Background(), &n))
			if n == 2 {
				okExec = b.do(http.MethodGet, "/v1/cron-jobs/"+ok+"/executions", nil).JSON(t)
				badExec = b.do(http.MethodGet, "/v1/cron-jobs/"+bad+"/executions?status=failed", nil).JSON(t)
			}
			time.Sleep(5 * time.Millisecond)
		}
		require.NotNil(t, okExec, "executions recorded")
		require.EqualValues(t, 1, okExec["meta"].(map[string]any)["total"])
		e := okExec["data"].([]any)[0].(map[string]any)
		require.True(t, strings.HasPrefix(e["id"].(string), "exe_"))
		require.Equal(t, ok, e["cron_job_id"])
		require.Equal(t, "success", e["status"])
		require.EqualValues(t, 200, e["response_code"])
		require.Equal(t, map[string]any{"ok": true, "method": "POST"}, e["response_body"])
		require.Equal(t, "2026-07-01T08:01:00Z", e["scheduled_for"])
		require.NotContains(t, e, "error")
		require.NotContains(t, e, "interrupted_attempts", "shown only when a crash cut a call off")

		f := badExec["data"].([]any)[0].(map[string]any)
		require.Equal(t, "failed", f["status"])
		require.EqualValues(t, 500, f["response_code"])
		require.Equal(t, "broken", f["response_body"], "a body that is not JSON is kept as a string")
		require.Equal(t, "the endpoint answered 500", f["error"])
		none := b.do(http.MethodGet, "/v1/cron-jobs/"+bad+"/executions?status=success", nil).JSON(t)
		require.EqualValues(t, 0, none["meta"].(map[string]any)["total"])

		got := b.do(http.MethodGet, "/v1/cron-jobs/"+bad, nil).JSON(t)
		last := got["last_execution"].(map[string]any)
		require.Equal(t, "failed", last["status"])
		require.EqualValues(t, 500, last["response_code"])
		require.Equal(t, "2026-07-02T09:01:00+01:00", got["next_execution"])
		requireCronError(t, b.do(http.MethodGet, "/v1/cron-jobs/"+bad+"/executions?status=running", nil), http.StatusBadRequest, "validation_error")
	})
}
