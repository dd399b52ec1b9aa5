package tests

import (
	"encoding/json"

	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The A1Cron client of A1Base's Next.js template
// (a1baseai/a1base-nextjs-template) is replayed request by request: each
// call below is what a function of lib/a1cron/service.ts (class
// A1CronService), called as lib/a1cron/examples.ts,
// scripts/test-a1cron.js or docs/A1CRON_INTEGRATION.md call it, puts on
// the wire: the method, the path under
// `${A1CRON_BASE_URL}/${accountId}`, the query string in the order its
// URLSearchParams builds it, the body as JSON.stringify writes it (keys in
// the order the spread objects give them, undefined fields left out), and
// the headers of makeRequest (X-API-Key, X-API-Secret, and Content-Type:
// application/json on every call). Every field the template reads of an
// answer is checked.

// a1Client is A1CronService.makeRequest against the built server.
type a1Client struct {
	t       *testing.T
	c       *openapitest.Client
	account string
	key     string
	secret  string
}

// call sends one request as makeRequest does: endpoint is the path and
// query after the account id, body the JSON.stringify text (empty: none).
func (a a1Client) call(method, endpoint, body string) openapitest.Response {
	a.t.Helper()
	var raw any
	if body != "" {
		raw = body
	}
	return a.c.Do(method, "/v1/cron-jobs/"+a.account+endpoint, raw,
		"X-API-Key", a.key, "X-API-Secret", a.secret, "Content-Type", "application/json")
}

// ok sends a request that must answer status and returns its data.
func (a a1Client) ok(status int, method, endpoint, body string) (data any, whole map[string]any) {
	a.t.Helper()
	r := a.call(method, endpoint, body)
	require.Equal(a.t, status, r.StatusCode, "%s %s: %s", method, endpoint, r.Body)
	whole = r.JSON(a.t)
	require.Contains(a.t, whole, "data", "the {data: …} envelope of %s %s", method, endpoint)
	return whole["data"], whole
}

// job sends a request that answers one job.
func (a a1Client) job(status int, method, endpoint, body string) map[string]any {
	a.t.Helper()
	data, _ := a.ok(status, method, endpoint, body)
	return data.(map[string]any)
}

// refused sends a request that must answer status in A1Cron's error
// shape and returns its details by field.
func (a a1Client) refused(status int, method, endpoint, body string) map[string]any {
	a.t.Helper()
	r := a.call(method, endpoint, body)
	require.Equal(a.t, status, r.StatusCode, "%s %s: %s", method, endpoint, r.Body)
	e := r.JSON(a.t)
	require.Equal(a.t, false, e["success"], "%s", r.Body)
	require.NotEmpty(a.t, e["error"], "%s", r.Body)
	return e["details"].(map[string]any)
}

// a1Receiver is the template's app on 127.0.0.1: the routes the example
// jobs call, and app/api/a1base/cron-webhook/route.ts, which takes the
// callbacks and answers as that route does.
type a1Receiver struct {
	URL string

	mu        sync.Mutex
	calls     map[string][]rawDelivery
	callbacks []rawDelivery
	release   chan struct{}
}

func newA1Receiver(t *testing.T) *a1Receiver {
	t.Helper()
	rr := &a1Receiver{calls: map[string][]rawDelivery{}, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := rawDelivery{body: string(body), header: r.Header.Clone()}
		d.header.Set("X-Method", r.Method)
		rr.mu.Lock()
		if r.URL.Path == "/api/a1base/cron-webhook" {
			rr.callbacks = append(rr.callbacks, d)
		} else {
			rr.calls[r.URL.Path] = append(rr.calls[r.URL.Path], d)
		}
		rr.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/a1base/cron-webhook":
			_, _ = w.Write([]byte(`{"status":"success","message":"Webhook processed successfully"}`))
		case "/api/billing/send-reminders":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"billing is down"}`))
		case "/api/slow":
			select {
			case <-rr.release:
			case <-r.Context().Done():
			}
		default:
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	}))
	t.Cleanup(func() {
		close(rr.release)
		srv.Close()
	})
	rr.URL = srv.URL
	return rr
}

func (rr *a1Receiver) callsTo(path string) []rawDelivery {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]rawDelivery(nil), rr.calls[path]...)
}

// waitCallbacks waits for n callbacks and returns them, oldest first.
func (rr *a1Receiver) waitCallbacks(t *testing.T, n int) []rawDelivery {
	t.Helper()
	ok := assertEventually(func() bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return len(rr.callbacks) >= n
	})
	rr.mu.Lock()
	defer rr.mu.Unlock()
	require.True(t, ok, "%d callbacks should arrive, got %d", n, len(rr.callbacks))
	return append([]rawDelivery(nil), rr.callbacks...)
}

// nextAt is the first wall time hh:mm in zone strictly after after.
func nextAt(t *testing.T, after time.Time, zone string, hh, mm int) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	l := after.In(loc)
	at := time.Date(l.Year(), l.Month(), l.Day(), hh, mm, 0, 0, loc)
	if !at.After(after) {
		at = time.Date(l.Year(), l.Month(), l.Day()+1, hh, mm, 0, 0, loc)
	}
	return at
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "a timestamp string, got %v", v)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

// requireA1Job checks the fields of a CronJob (lib/a1cron/types.ts) the
// template and its scripts read.
func requireA1Job(t *testing.T, job map[string]any, want map[string]any) {
	t.Helper()
	for _, f := range []string{"id", "name", "endpoint_url", "schedule", "method", "timezone", "schedule_config", "tags", "is_active",
		"created_at", "updated_at", "total_executions", "successful_executions", "failed_executions"} {
		require.Contains(t, job, f, "CronJob.%s in %v", f, job)
	}
	require.True(t, strings.HasPrefix(job["id"].(string), "crn_"), "%v", job["id"])
	parseTime(t, job["created_at"])
	parseTime(t, job["updated_at"])
	for f, v := range want {
		require.Equal(t, v, job[f], "CronJob.%s", f)
	}
}

// TestA1CronTemplateClient replays the template's A1Cron client against
// the built server on both databases: every call of A1CronService, the
// examples' jobs, the callbacks its cron-webhook route receives (verified
// as its webhook-verification does), retries, timeouts, logs and their
// filters, the interface's cron routes seeing the same jobs, and bad
// input.
func TestA1CronTemplateClient(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Template")
		other := b.createAccount(t, "Other")
		app := newA1Receiver(t)
		hookURL := app.URL + "/api/a1base/cron-webhook"
		// The template verifies what A1Base sends with its API secret: the
		// account's webhook secret is set to it, and callbacks are signed
		// with it as deliveries are.
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", app.URL+"/api/whatsapp/incoming",
			"--secret", acct.APISecret, "--allow-private-urls", "127.0.0.1/32")
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32")
		a1 := a1Client{t: t, c: srv.client(t), account: acct.AccountID, key: acct.APIKey, secret: acct.APISecret}
		iface := func(method, path string, body any) openapitest.Response {
			return a1.c.Do(method, path, body, auth(acct.APIKey, acct.APISecret)...)
		}

		// lib/a1cron/examples.ts scheduleDailySummaryReport →
		// A1CronService.createDailyCronJob → createCronJob: POST /create.
		// (process.env.CRON_SECRET unset: 'your-secret'.)
		before := time.Now()
		daily := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":true,"name":"Daily Conversation Summary",`+
			`"description":"Generate and send daily summary of all conversations","endpoint_url":"`+app.URL+`/api/reports/daily-summary",`+
			`"method":"POST","headers":{"Content-Type":"application/json","X-Cron-Secret":"your-secret"},`+
			`"body":"{\"includeMetrics\":true,\"includeTrends\":true,\"format\":\"detailed\"}","timezone":"America/New_York",`+
			`"schedule_config":{"end_type":"never","repeat_type":"days","repeat_every":1,"time":"09:00"},`+
			`"retry_config":{"max_retries":3,"retry_delay_seconds":300,"timeout_seconds":60},`+
			`"callbacks":{"success_url":"`+hookURL+`","failure_url":"`+hookURL+`"},"tags":["reports","daily","summary"]}`)
		requireA1Job(t, daily, map[string]any{
			"name": "Daily Conversation Summary", "description": "Generate and send daily summary of all conversations",
			"endpoint_url": app.URL + "/api/reports/daily-summary", "method": "POST", "timezone": "America/New_York",
			"headers": map[string]any{"Content-Type": "application/json", "X-Cron-Secret": "your-secret"},
			"body":    `{"includeMetrics":true,"includeTrends":true,"format":"detailed"}`, "schedule": "0 9 * * *",
			"schedule_config": map[string]any{"repeat_type": "days", "repeat_every": float64(1), "time": "09:00", "end_type": "never"},
			"retry_config":    map[string]any{"max_retries": float64(3), "retry_delay_seconds": float64(300), "timeout_seconds": float64(60)},
			"callbacks":       map[string]any{"success_url": hookURL, "failure_url": hookURL},
			"tags":            []any{"reports", "daily", "summary"}, "is_active": true,
			"total_executions": float64(0), "successful_executions": float64(0), "failed_executions": float64(0),
		})
		require.WithinDuration(t, nextAt(t, before, "America/New_York", 9, 0), parseTime(t, daily["next_run_at"]), 0, "next_run_at: the next 09:00 in New York")
		dailyID := daily["id"].(string)

		// examples.ts scheduleHourlyCleanup → createHourlyCronJob: "00:30"
		// is half past every hour.
		hourly := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":true,"name":"Database Cleanup",`+
			`"description":"Clean up old messages and optimize database","endpoint_url":"`+app.URL+`/api/maintenance/cleanup","method":"POST",`+
			`"body":"{\"deleteOlderThan\":30,\"optimizeTables\":true,\"vacuum\":true}","timezone":"UTC",`+
			`"schedule_config":{"end_type":"never","repeat_type":"hourly","repeat_every":1,"time":"00:30"},`+
			`"retry_config":{"max_retries":2,"retry_delay_seconds":60,"timeout_seconds":300},"tags":["maintenance","cleanup","database"]}`)
		requireA1Job(t, hourly, map[string]any{"schedule": "30 * * * *", "callbacks": map[string]any{},
			"schedule_config": map[string]any{"repeat_type": "hourly", "repeat_every": float64(1), "time": "00:30", "end_type": "never"}})
		next := parseTime(t, hourly["next_run_at"])
		require.Equal(t, 30, next.Minute())
		require.True(t, next.After(before) && next.Sub(before) <= time.Hour, "within the hour: %s", next)

		// examples.ts scheduleWeeklyTeamReport → createCronJob.
		weekly := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":true,"name":"Weekly Team Performance Report",`+
			`"description":"Send team performance metrics every Monday","endpoint_url":"`+app.URL+`/api/reports/team-performance",`+
			`"method":"POST","timezone":"America/New_York","schedule_config":{"end_type":"never","repeat_type":"weeks","repeat_every":1,`+
			`"time":"08:00","days_of_week":["1"]},"body":"{\"recipients\":[\"ann@example.com\"],\"metrics\":[\"response_time\",`+
			`\"resolution_rate\",\"satisfaction_score\"],\"period\":\"last_week\",\"includeCharts\":true}",`+
			`"headers":{"Content-Type":"application/json"},"retry_config":{"max_retries":3,"retry_delay_seconds":600,"timeout_seconds":120},`+
			`"callbacks":{"success_url":"`+hookURL+`","failure_url":"`+hookURL+`"},"tags":["reports","weekly","team","performance"]}`)
		requireA1Job(t, weekly, map[string]any{"schedule": "0 8 * * 1",
			"schedule_config": map[string]any{"repeat_type": "weeks", "repeat_every": float64(1), "time": "08:00", "end_type": "never", "days_of_week": []any{"1"}}})
		require.Equal(t, time.Monday, parseTime(t, weekly["next_run_at"]).In(mustZone(t, "America/New_York")).Weekday())

		// examples.ts scheduleMonthlyBillingReminder: on the 1st.
		monthly := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":true,"name":"Monthly Billing Reminder",`+
			`"description":"Send billing reminders on the 25th of each month","endpoint_url":"`+app.URL+`/api/billing/send-reminders",`+
			`"method":"POST","timezone":"America/New_York","schedule_config":{"end_type":"never","repeat_type":"months","repeat_every":1,"time":"10:00"},`+
			`"body":"{\"daysBeforeDue\":5,\"includeInvoice\":true,\"sendToOverdue\":true}",`+
			`"retry_config":{"max_retries":5,"retry_delay_seconds":1800,"timeout_seconds":180},"tags":["billing","monthly","reminders"]}`)
		requireA1Job(t, monthly, map[string]any{"schedule": "0 10 1 * *"})
		require.Equal(t, 1, parseTime(t, monthly["next_run_at"]).In(mustZone(t, "America/New_York")).Day())

		// examples.ts scheduleLimitedCampaign (campaignDays 30).
		campaign := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":true,"name":"30-Day Marketing Campaign",`+
			`"description":"Daily campaign messages for 30 days","endpoint_url":"`+app.URL+`/api/campaigns/send-daily","method":"POST",`+
			`"timezone":"America/Los_Angeles","schedule_config":{"end_type":"after","repeat_type":"days","repeat_every":1,"time":"10:00",`+
			`"end_occurrences":30},"body":"{\"campaignId\":\"summer-2024\",\"segment\":\"active-users\",\"template\":\"daily-tip\"}",`+
			`"tags":["campaign","marketing","limited"]}`)
		requireA1Job(t, campaign, map[string]any{"runs_made": float64(0),
			"schedule_config": map[string]any{"repeat_type": "days", "repeat_every": float64(1), "time": "10:00", "end_type": "after", "end_occurrences": float64(30)}})

		// docs/A1CRON_INTEGRATION.md, listCronJobs({is_active: true,
		// tags: ['reports'], limit: 10}): GET /list?limit=10&is_active=true&tags=reports.
		data, whole := a1.ok(http.StatusOK, http.MethodGet, "/list?limit=10&is_active=true&tags=reports", "")
		names := []string{}
		for _, j := range data.([]any) {
			requireA1Job(t, j.(map[string]any), nil)
			names = append(names, j.(map[string]any)["name"].(string))
		}
		require.Equal(t, []string{"Daily Conversation Summary", "Weekly Team Performance Report"}, names)
		require.Equal(t, map[string]any{"total": float64(2), "page": float64(1), "limit": float64(10), "total_pages": float64(1)}, whole["pagination"])
		// listCronJobs({page: 2, limit: 1, search: 'REPORT'}): page, limit,
		// search in that order; the daily job's URL and the weekly job's
		// name match, ignoring case.
		data, whole = a1.ok(http.StatusOK, http.MethodGet, "/list?page=2&limit=1&search=REPORT", "")
		require.Len(t, data, 1)
		require.Equal(t, "Weekly Team Performance Report", data.([]any)[0].(map[string]any)["name"])
		require.Equal(t, map[string]any{"total": float64(2), "page": float64(2), "limit": float64(1), "total_pages": float64(2)}, whole["pagination"])
		data, _ = a1.ok(http.StatusOK, http.MethodGet, "/list?is_active=false", "")
		require.Len(t, data, 0)
		data, _ = a1.ok(http.StatusOK, http.MethodGet, "/list?tags=reports%2Cweekly", "")
		require.Len(t, data, 1, "a job carries every tag given")
		// scripts/test-a1cron.js listCronJobs: GET /list; it reads name,
		// id, is_active, endpoint_url, schedule, next_run_at,
		// total_executions, successful_executions.
		data, _ = a1.ok(http.StatusOK, http.MethodGet, "/list", "")
		require.Len(t, data, 5)

		// getCronJobDetails: GET /details/{id}.
		requireA1Job(t, a1.job(http.StatusOK, http.MethodGet, "/details/"+dailyID, ""), map[string]any{"name": "Daily Conversation Summary"})

		// examples.ts pauseAndResumeJob → toggleCronJob(id, false) →
		// updateCronJob: PATCH /update/{id} {"is_active":false}.
		paused := a1.job(http.StatusOK, http.MethodPatch, "/update/"+dailyID, `{"is_active":false}`)
		require.Equal(t, false, paused["is_active"])
		require.NotContains(t, paused, "next_run_at")
		r := iface(http.MethodGet, "/v1/cron-jobs/"+dailyID, nil)
		require.Equal(t, "paused", r.JSON(t)["status"], "paused through A1Cron, paused on the interface's routes: %s", r.Body)
		require.Equal(t, http.StatusOK, iface(http.MethodPost, "/v1/cron-jobs/"+dailyID+"/resume", nil).StatusCode)
		resumed := a1.job(http.StatusOK, http.MethodGet, "/details/"+dailyID, "")
		require.Equal(t, true, resumed["is_active"], "resumed on the interface's routes, active through A1Cron")
		require.Contains(t, resumed, "next_run_at")
		// docs/A1CRON_INTEGRATION.md "Update a Cron Job": every 2 days at 10:00, paused.
		changed := a1.job(http.StatusOK, http.MethodPatch, "/update/"+dailyID, `{"is_active":false,"schedule_config":{"repeat_type":"days","repeat_every":2,"time":"10:00"}}`)
		require.Equal(t, map[string]any{"repeat_type": "days", "repeat_every": float64(2), "time": "10:00", "end_type": "never"}, changed["schedule_config"])
		require.Equal(t, false, changed["is_active"])
		require.True(t, strings.HasPrefix(changed["schedule"].(string), "every 2 days at 10:00 from "), "%v", changed["schedule"])
		changed = a1.job(http.StatusOK, http.MethodPatch, "/update/"+dailyID, `{"is_active":true}`)
		at := parseTime(t, changed["next_run_at"]).In(mustZone(t, "America/New_York"))
		require.Equal(t, 10, at.Hour(), "every 2 days at 10:00: %s", at)

		// scripts/test-a1cron.js createTestCronJob: GET /api/health every
		// hour, with callbacks; then triggerCronJob: POST /trigger/{id}.
		health := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"name":"Test Health Check - 2026-11-29T08:00:00.000Z",`+
			`"description":"A test cron job that checks API health","endpoint_url":"`+app.URL+`/api/health","method":"GET",`+
			`"timezone":"America/New_York","schedule_config":{"repeat_type":"hourly","repeat_every":1,"time":"00:00","end_type":"never"},`+
			`"retry_config":{"max_retries":3,"retry_delay_seconds":60,"timeout_seconds":30},`+
			`"callbacks":{"success_url":"`+hookURL+`","failure_url":"`+hookURL+`"},"tags":["test","health-check"],"is_active":true}`)
		require.NotEmpty(t, health["next_run_at"], "the script prints next_run_at")
		healthID := health["id"].(string)
		trig := a1.job(http.StatusOK, http.MethodPost, "/trigger/"+healthID, "")
		require.True(t, strings.HasPrefix(trig["execution_id"].(string), "exe_"), "%v", trig)
		require.Equal(t, "success", trig["status"])
		require.Equal(t, float64(200), trig["response_code"])
		require.Equal(t, `{"ok":true}`, trig["response_body"])
		executedAt := parseTime(t, trig["executed_at"])
		calls := app.callsTo("/api/health")
		require.Len(t, calls, 1)
		require.Equal(t, "GET", calls[0].header.Get("X-Method"))
		require.True(t, strings.HasPrefix(calls[0].header.Get("Idempotency-Key"), healthID+":"), "%v", calls[0].header)

		// app/api/a1base/cron-webhook/route.ts receives the success
		// callback: cron_job_id, execution_id, status, executed_at,
		// response_code, response_time_ms; its signature verifies with the
		// API secret as lib/security/webhook-verification.ts checks it.
		cb := app.waitCallbacks(t, 1)[0]
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(cb.body), &got))
		require.Equal(t, healthID, got["cron_job_id"])
		require.Equal(t, trig["execution_id"], got["execution_id"])
		require.Equal(t, "success", got["status"])
		require.Equal(t, float64(200), got["response_code"])
		require.Contains(t, got, "response_time_ms")
		require.WithinDuration(t, executedAt, parseTime(t, got["executed_at"]), 0)
		require.Equal(t, "valid", verifyLikeTemplate(t, node, acct.APISecret, cb, "x-signature"), "the callback is signed like a webhook delivery")
		require.Equal(t, "cron.execution", cb.header.Get("x-event-type"))

		// The monthly job's endpoint answers 503: retried once after one
		// second (retry_config), then a failure; the failure callback
		// follows. The trigger answers retry while a retry is to come.
		billingID := monthly["id"].(string)
		a1.job(http.StatusOK, http.MethodPatch, "/update/"+billingID, `{"retry_config":{"max_retries":1,"retry_delay_seconds":1},`+
			`"callbacks":{"failure_url":"`+hookURL+`"}}`)
		trig = a1.job(http.StatusOK, http.MethodPost, "/trigger/"+billingID, "")
		require.Equal(t, "retry", trig["status"])
		require.Equal(t, float64(503), trig["response_code"])
		require.Equal(t, `{"error":"billing is down"}`, trig["response_body"])
		cbs := app.waitCallbacks(t, 2)
		require.NoError(t, json.Unmarshal([]byte(cbs[1].body), &got))
		require.Equal(t, map[string]any{"cron_job_id": billingID, "execution_id": trig["execution_id"], "status": "failure",
			"executed_at": got["executed_at"], "response_code": float64(503), "response_time_ms": got["response_time_ms"],
			"error_message": "the endpoint answered 503"}, got)
		require.Equal(t, "valid", verifyLikeTemplate(t, node, acct.APISecret, cbs[1], "x-signature"))
		require.Len(t, app.callsTo("/api/billing/send-reminders"), 2, "the call and its one retry")
		// examples.ts monitorJobExecution → getExecutionLogs(id, {limit:
		// 10, status: 'failure'}): it reads executed_at and error_message.
		logs, _ := a1.ok(http.StatusOK, http.MethodGet, "/logs/"+billingID+"?limit=10&status=failure", "")
		require.Len(t, logs, 1)
		log := logs.([]any)[0].(map[string]any)
		require.Equal(t, trig["execution_id"], log["execution_id"])
		require.Equal(t, trig["execution_id"], log["id"])
		require.Equal(t, billingID, log["cron_job_id"])
		require.Equal(t, "failure", log["status"])
		require.Equal(t, "the endpoint answered 503", log["error_message"])
		require.Equal(t, float64(1), log["retry_attempt"])
		require.Equal(t, float64(503), log["response_code"])
		parseTime(t, log["executed_at"])
		details := a1.job(http.StatusOK, http.MethodGet, "/details/"+billingID, "")
		require.Equal(t, float64(1), details["total_executions"])
		require.Equal(t, float64(1), details["failed_executions"])
		require.Contains(t, details, "last_run_at")

		// A call that outlasts timeout_seconds is a timeout.
		slow := a1.job(http.StatusCreated, http.MethodPost, "/create", `{"is_active":false,"name":"Slow","endpoint_url":"`+app.URL+`/api/slow",`+
			`"method":"GET","timezone":"UTC","schedule_config":{"end_type":"never","repeat_type":"days","repeat_every":1,"time":"03:00"},`+
			`"retry_config":{"max_retries":0,"retry_delay_seconds":60,"timeout_seconds":1}}`)
		trig = a1.job(http.StatusOK, http.MethodPost, "/trigger/"+slow["id"].(string), "")
		require.Equal(t, "timeout", trig["status"], "a paused job runs on demand too: %v", trig)
		require.Equal(t, float64(0), trig["response_code"])
		// getExecutionLogs(id, {limit, status, start_date, end_date}).
		today := time.Now().UTC().Format("2006-01-02")
		logs, _ = a1.ok(http.StatusOK, http.MethodGet, "/logs/"+slow["id"].(string)+"?limit=20&status=timeout&start_date="+today+"&end_date="+today, "")
		require.Len(t, logs, 1)
		logs, _ = a1.ok(http.StatusOK, http.MethodGet, "/logs/"+slow["id"].(string)+"?status=failure", "")
		require.Len(t, logs, 0, "a timeout is not a failure")
		logs, _ = a1.ok(http.StatusOK, http.MethodGet, "/logs/"+slow["id"].(string)+"?start_date=2000-01-01&end_date=2000-01-02", "")
		require.Len(t, logs, 0)

		// A job made on the interface's routes is an A1Cron job too, and
		// the other way round; each deletes the other's.
		r = iface(http.MethodPost, "/v1/cron-jobs", map[string]any{"endpoint_url": app.URL + "/api/interface", "frequency": "weekly",
			"day_of_week": 3, "time": "07:15", "timezone": "Europe/London", "method": "POST", "body": map[string]any{"a": 1}})
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
		ifaceID := r.JSON(t)["id"].(string)
		requireA1Job(t, a1.job(http.StatusOK, http.MethodGet, "/details/"+ifaceID, ""), map[string]any{"name": "", "schedule": "15 7 * * 3", "body": `{"a":1}`,
			"schedule_config": map[string]any{"repeat_type": "weeks", "repeat_every": float64(1), "time": "07:15", "end_type": "never", "days_of_week": []any{"3"}}})
		r = iface(http.MethodGet, "/v1/cron-jobs/"+healthID, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, "hourly", r.JSON(t)["frequency"])
		require.Equal(t, "success", r.JSON(t)["last_execution"].(map[string]any)["status"])
		var gql map[string]any
		postGraphQL(t, srv.URL, acct, `{ cronJob(id: "`+healthID+`") { name tags frequency method } }`, &gql)
		require.Equal(t, map[string]any{"cronJob": map[string]any{"name": "Test Health Check - 2026-11-29T08:00:00.000Z",
			"tags": []any{"test", "health-check"}, "frequency": "HOURLY", "method": "GET"}}, gql["data"], "%v", gql)
		// deleteCronJob: DELETE /delete/{id}; the script prints data.message.
		gone := a1.job(http.StatusOK, http.MethodDelete, "/delete/"+ifaceID, "")
		require.NotEmpty(t, gone["message"])
		require.Equal(t, http.StatusNotFound, iface(http.MethodGet, "/v1/cron-jobs/"+ifaceID, nil).StatusCode)
		require.Equal(t, http.StatusOK, iface(http.MethodDelete, "/v1/cron-jobs/"+weekly["id"].(string), nil).StatusCode)
		a1.refused(http.StatusNotFound, http.MethodGet, "/details/"+weekly["id"].(string), "")

		// Bad input: each named by its field, 422.
		create := func(schedule string) string {
			return `{"is_active":true,"name":"Bad","endpoint_url":"` + app.URL + `/api/x","method":"POST","timezone":"UTC","schedule_config":` + schedule + `}`
		}
		for schedule, field := range map[string]string{
			`{"end_type":"never","repeat_type":"days","repeat_every":1,"time":"25:00"}`:                       "schedule_config.time",
			`{"end_type":"never","repeat_type":"days","repeat_every":0,"time":"09:00"}`:                       "schedule_config.repeat_every",
			`{"end_type":"never","repeat_type":"weeks","repeat_every":1,"time":"09:00","days_of_week":["9"]}`: "schedule_config.days_of_week.0",
			`{"end_type":"after","repeat_type":"days","repeat_every":1,"time":"09:00"}`:                       "schedule_config.end_occurrences",
			`{"end_type":"never","repeat_type":"minutely","repeat_every":1,"time":"09:00"}`:                   "schedule_config.repeat_type",
			`{"end_type":"on","repeat_type":"days","repeat_every":1,"time":"09:00","end_date":"soon"}`:        "schedule_config.end_date",
		} {
			details := a1.refused(http.StatusUnprocessableEntity, http.MethodPost, "/create", create(schedule))
			require.Contains(t, details, field, "%s: %v", schedule, details)
		}
		// A callback URL into a private range is refused when saved, like
		// every URL the server calls for a customer (no connection made).
		for _, url := range []string{"http://10.0.0.7/cb", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/cb"} {
			details := a1.refused(http.StatusUnprocessableEntity, http.MethodPost, "/create", `{"name":"Private","endpoint_url":"`+app.URL+`/api/x",`+
				`"method":"POST","timezone":"UTC","schedule_config":{"repeat_type":"days","time":"09:00"},"callbacks":{"success_url":"`+url+`"}}`)
			require.Contains(t, details, "callbacks.success_url", "%s: %v", url, details)
			details = a1.refused(http.StatusUnprocessableEntity, http.MethodPatch, "/update/"+healthID, `{"callbacks":{"failure_url":"`+url+`"}}`)
			require.Contains(t, details, "callbacks.failure_url", "%s: %v", url, details)
		}
		details = a1.refused(http.StatusUnprocessableEntity, http.MethodPost, "/create", `{"name":"No retries","endpoint_url":"`+app.URL+`/api/x",`+
			`"method":"POST","timezone":"UTC","schedule_config":{"repeat_type":"days","time":"09:00"},"retry_config":{"max_retries":11,"timeout_seconds":301}}`)
		require.Contains(t, details, "retry_config.max_retries")
		require.Contains(t, details, "retry_config.timeout_seconds")
		details = a1.refused(http.StatusUnprocessableEntity, http.MethodGet, "/logs/"+healthID+"?status=failed", "")
		require.Contains(t, details, "status")
		// Another account's job: 404 on every call; another account's path: 403.
		otherJob := a1Client{t: t, c: a1.c, account: other.AccountID, key: other.APIKey, secret: other.APISecret}.
			job(http.StatusCreated, http.MethodPost, "/create", create(`{"repeat_type":"days","time":"09:00"}`))
		for _, call := range [][2]string{{http.MethodPost, "/trigger/"}, {http.MethodGet, "/details/"}, {http.MethodGet, "/logs/"},
			{http.MethodDelete, "/delete/"}} {
			a1.refused(http.StatusNotFound, call[0], call[1]+otherJob["id"].(string), "")
		}
		a1.refused(http.StatusNotFound, http.MethodPatch, "/update/"+otherJob["id"].(string), `{"is_active":false}`)
		forbidden := a1Client{t: t, c: a1.c, account: other.AccountID, key: acct.APIKey, secret: acct.APISecret}
		forbidden.refused(http.StatusForbidden, http.MethodGet, "/list", "")
		require.Equal(t, http.StatusUnauthorized, a1Client{t: t, c: a1.c, account: acct.AccountID, key: acct.APIKey, secret: "wrong"}.
			call(http.MethodGet, "/list", "").StatusCode)
		srv.stop(t)
	})
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}
