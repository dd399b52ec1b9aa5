package browser

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The Cron page: a job the API refuses shows the API's messages at the
// fields they name (and nothing is created); a valid one appears in the
// list, active with its next run; pause shows it paused without a next
// run, resume active again; its details show a header of markup as text;
// an edit changes its schedule; delete asks first, in the page, and
// removes it. No sideways scrolling at 390 and 1280 px.
func TestCronPage(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(endpoint.Close)
	tb := newTab(t, s.URL)
	tb.signedIn(s)

	tb.open("/dashboard/cron")
	tb.waitReady()
	tb.waitText(".cron-list", "No cron jobs yet")

	tb.clickText("New job")
	tb.waitVisible(`form.cron-form input[name="endpoint_url"]`)
	require.Equal(t, "endpoint_url", eval[string](tb, `document.activeElement.name`), "the form opens with the focus on its first field")
	for _, name := range []string{"endpoint_url", "method", "frequency", "time", "timezone", "headers", "body", "timeout_seconds", "retries"} {
		require.Equal(t, 1, eval[int](tb, `(() => { const c = document.querySelector('form.cron-form [name="`+name+`"]'); return document.querySelectorAll('label[for="' + c.id + '"]').length; })()`), "%s is labelled", name)
	}

	// Invalid: a time that is no time, a zone that is none. The API's
	// own messages show at those fields.
	tb.fill(`input[name="endpoint_url"]`, endpoint.URL+"/tick")
	tb.fill(`input[name="time"]`, "25:99")
	tb.fill(`input[name="timezone"]`, "Mars/Olympus")
	tb.click(`form.cron-form button[type="submit"]`)
	tb.waitText(".field-error", "time must be a 24-hour time HH:MM, e.g. 09:30")
	tb.waitText(".field-error", `timezone "Mars/Olympus" is not a known IANA time zone`)
	require.Equal(t, "true", eval[string](tb, `document.querySelector('input[name="time"]').getAttribute('aria-invalid')`))
	require.Equal(t, "time", eval[string](tb, `document.activeElement.name`), "the first refused field has the focus")
	_, listed := s.api(http.MethodGet, "/v1/cron-jobs", nil)
	require.Equal(t, float64(0), listed["meta"].(map[string]any)["total"], "nothing was created")

	// Valid, with a header of markup.
	tb.fill(`input[name="time"]`, "09:30")
	tb.fill(`input[name="timezone"]`, "Europe/London")
	tb.fill(`textarea[name="headers"]`, `X-Note: <script>window.__xss = 1</script>`)
	tb.fill(`textarea[name="body"]`, `{"report": "daily"}`)
	tb.click(`form.cron-form button[type="submit"]`)
	tb.waitVisible(".cron-list tr.cron-job")
	require.Equal(t, 0, tb.count("form.cron-form"), "the form closes")
	require.Equal(t, "active", tb.text(".cron-list tr.cron-job .job-status"))
	require.NotEmpty(t, eval[string](tb, `document.querySelector('.cron-list tr.cron-job .next-run time').getAttribute('datetime')`), "an active job has a next run")
	require.Contains(t, tb.text(".cron-list tr.cron-job"), "Daily at 09:30")
	require.Contains(t, tb.text(".cron-list tr.cron-job"), endpoint.URL+"/tick")
	id := eval[string](tb, `document.querySelector('.cron-list tr.cron-job').dataset.id`)
	require.True(t, strings.HasPrefix(id, "crn_"), "job id %q", id)

	// Pause: paused, no next run; resume: active again.
	tb.clickText("Pause")
	tb.waitFor("the job to show paused", `() => {
		const tr = document.querySelector('.cron-list tr.cron-job');
		return tr && tr.dataset.status === 'paused' && tr.querySelector('.job-status').textContent === 'paused';
	}`)
	require.Equal(t, 0, tb.count(".cron-list tr.cron-job .next-run time"), "a paused job has no next run")
	job := s.mustAPI(http.MethodGet, "/v1/cron-jobs/"+id, nil)
	require.Equal(t, "paused", job["status"], "paused through the API")
	tb.clickText("Resume")
	tb.waitText(".cron-list tr.cron-job .job-status", "active")

	// The job's details and executions: the header is text.
	tb.click(".cron-list tr.cron-job button.executions")
	tb.waitText(".cron-executions", "No executions yet")
	tb.waitText(".cron-executions .cron-headers", "X-Note: <script>window.__xss = 1</script>")
	require.Equal(t, 0, tb.count("#app script"), "no element made from the header")
	require.Equal(t, "undefined", eval[string](tb, `typeof window.__xss`))
	require.Contains(t, tb.text(".cron-executions .job-body"), `"report": "daily"`)

	// Edit: the form holds the job; a weekly schedule needs its day.
	tb.click(".cron-list tr.cron-job button.edit")
	tb.waitVisible(`form.cron-form input[name="time"]`)
	require.Equal(t, "09:30", eval[string](tb, `document.querySelector('form.cron-form input[name="time"]').value`))
	require.Contains(t, eval[string](tb, `document.querySelector('form.cron-form textarea[name="headers"]').value`), "X-Note: <script>")
	tb.do(setSelect(`form.cron-form select[name="frequency"]`, "weekly"))
	tb.waitVisible(`form.cron-form select[name="day_of_week"]`)
	tb.do(setSelect(`form.cron-form select[name="day_of_week"]`, "1"))
	tb.fill(`form.cron-form input[name="time"]`, "10:15")
	tb.clickText("Save changes")
	tb.waitText(".cron-list tr.cron-job", "Weekly on Monday at 10:15")
	job = s.mustAPI(http.MethodGet, "/v1/cron-jobs/"+id, nil)
	require.Equal(t, "weekly", job["frequency"])
	require.Equal(t, float64(1), job["day_of_week"])

	for _, width := range []int64{390, 1280} {
		tb.viewport(width, 900)
		tb.requireNoHorizontalScroll("the Cron page")
	}
	tb.clickText("New job")
	tb.waitVisible("form.cron-form")
	tb.viewport(390, 900)
	tb.requireNoHorizontalScroll("the Cron page's form")
	tb.clickText("Cancel")
	tb.viewport(1280, 900)

	// Delete asks in the page first; Cancel keeps the job.
	tb.click(".cron-list tr.cron-job button.delete")
	tb.waitVisible(".confirm-delete")
	tb.clickText("Cancel")
	tb.waitVisible(".cron-list tr.cron-job button.delete")
	tb.click(".cron-list tr.cron-job button.delete")
	tb.waitVisible(".confirm-delete-yes")
	tb.click(".confirm-delete-yes")
	tb.waitText(".cron-list", "No cron jobs yet")
	status, _ := s.api(http.MethodGet, "/v1/cron-jobs/"+id, nil)
	require.Equal(t, http.StatusNotFound, status, "deleted through the API")
	tb.requireHealthy()
}

// A job's executions, as its runs happen: the page opened on the job
// (/dashboard/cron/<id>) shows its details and, without a reload, the
// run made at its next slot, with the endpoint's status code, the error
// and the body it answered, whose markup stays text.
func TestCronExecutions(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">down`)
	}))
	t.Cleanup(endpoint.Close)
	// Created and paused early in a minute: a job created in a minute's
	// last seconds ran before its pause arrived on a busy machine.
	for time.Now().Second() > 40 {
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	}
	// Every minute: the next run is at most a minute away.
	job := s.mustAPI(http.MethodPost, "/v1/cron-jobs", map[string]any{
		"endpoint_url": endpoint.URL + "/run", "method": "GET", "frequency": "custom", "custom_schedule": "* * * * *", "timezone": "UTC",
	})
	id := job["id"].(string)
	// Paused until the page has shown it has no executions: a page slow to
	// load under a busy machine would otherwise open after the first run.
	s.mustAPI(http.MethodPost, "/v1/cron-jobs/"+id+"/pause", nil)

	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/cron/" + id)
	tb.waitReady()
	tb.waitText(".cron-executions h2", "Executions of "+id)
	tb.waitText(".cron-executions .job-facts", "* * * * *")
	tb.waitText(".cron-executions", "No executions yet")
	tb.click(".cron-list tr.cron-job button.resume")
	tb.waitText(".cron-executions .job-facts", "next run")

	// The next slot is at most a minute away; the page looks for its run
	// for 20 s after it and then again at the slot after.
	waitLong(tb, 150*time.Second, "the run's execution to show", `() => !!document.querySelector('.cron-executions tr.execution')`)
	require.Equal(t, "500", tb.text(".cron-executions tr.execution .status-code"))
	require.Equal(t, "failed", tb.text(".cron-executions tr.execution .badge"))
	require.Contains(t, tb.text(".cron-executions tr.execution .execution-error"), "500")
	require.Contains(t, tb.text(".cron-executions tr.execution .response-body"), `<script>window.__xss = 1</script>`)
	require.Equal(t, 0, tb.count("#app script, #app img"), "no element made from the response")
	require.Equal(t, "undefined", eval[string](tb, `typeof window.__xss`))
	require.Contains(t, tb.text(".cron-executions .pager-status"), "of ")

	tb.viewport(390, 900)
	tb.requireNoHorizontalScroll("the Cron page with executions")
	tb.requireHealthy()
}

// Long lists are paged: 21 jobs are 20 and 1.
func TestCronPaging(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	// Never called (daily at 06:00); the address is checked when saved,
	// so it is a local one: the test needs no DNS.
	for i := range 21 {
		s.mustAPI(http.MethodPost, "/v1/cron-jobs", map[string]any{
			"endpoint_url": fmt.Sprintf("http://127.0.0.1:9/job/%02d", i), "method": "GET", "frequency": "daily", "time": "06:00", "timezone": "UTC",
		})
	}
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/cron")
	tb.waitReady()
	require.Equal(t, 20, tb.count(".cron-list tr.cron-job"))
	require.Equal(t, "1–20 of 21", tb.text(".cron-list .pager-status"))
	require.Contains(t, tb.text(".cron-list tr.cron-job"), "http://127.0.0.1:9/job/00", "oldest first")
	tb.clickText("Next page")
	tb.waitText(".cron-list .pager-status", "21–21 of 21")
	require.Equal(t, 1, tb.count(".cron-list tr.cron-job"))
	require.Contains(t, tb.text(".cron-list tr.cron-job"), "http://127.0.0.1:9/job/20")
	tb.clickText("Previous page")
	tb.waitText(".cron-list .pager-status", "1–20 of 21")
	tb.requireHealthy()
}

// waitLong is the harness's waitFor with a longer patience, for a
// condition that follows the clock (a cron job's next minute).
func waitLong(tb *tab, patience time.Duration, what, fn string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[chromedp.Void](fn,
		chromedp.WithPollingTimeout(patience), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		tb.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// setSelect chooses value in the select matching selector, as picking it
// would (a change event follows).
func setSelect(selector, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		el.focus();
		el.value = %s;
		el.dispatchEvent(new Event('change', {bubbles: true}));
	})()`, jsString(selector), jsString(value)))
}
