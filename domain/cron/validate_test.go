package cron_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

func validJob() cron.Job {
	return cron.Job{
		EndpointURL: "https://example.com/hook", Method: "POST",
		Spec: cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "Europe/London"},
	}
}

// fields returns the validation messages by field name.
func fields(t *testing.T, err error) map[string]string {
	t.Helper()
	fe := failure.As(err)
	if fe.Kind != failure.KindInvalid {
		t.Fatalf("want a validation error, got %v", err)
	}
	out := map[string]string{}
	for _, f := range fe.Fields {
		name := ""
		for i, p := range f.Path {
			if i > 0 {
				name += "."
			}
			name += fmt.Sprint(p)
		}
		out[name] = f.Message
	}
	return out
}

func TestValidateNamesEveryBrokenField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(j *cron.Job)
		field  string
		msg    string
	}{
		{"frequency", func(j *cron.Job) { j.Frequency = "yearly" }, "frequency", cron.FrequencyMessage},
		{"frequency missing", func(j *cron.Job) { j.Frequency = "" }, "frequency", "Field required"},
		{"time", func(j *cron.Job) { j.Time = "24:00" }, "time", "time must be a 24-hour time HH:MM, e.g. 09:30"},
		{"time form", func(j *cron.Job) { j.Time = "9:00" }, "time", "time must be a 24-hour time HH:MM, e.g. 09:30"},
		{"timezone not Area/City", func(j *cron.Job) { j.Timezone = "EST" }, "timezone", "timezone must be an IANA name of the form Area/City, e.g. Europe/London"},
		{"timezone unknown", func(j *cron.Job) { j.Timezone = "Mars/Olympus" }, "timezone", `timezone "Mars/Olympus" is not a known IANA time zone`},
		{"method", func(j *cron.Job) { j.Method = "PATCH" }, "method", "method must be one of GET, POST, PUT, DELETE"},
		{"method of an A1Cron job", func(j *cron.Job) { j.Method, j.Origin = "TRACE", cron.OriginA1Cron }, "method", "method must be one of GET, POST, PUT, PATCH, DELETE"},
		{"hourly is the A1Cron routes'", func(j *cron.Job) { j.Frequency, j.Start = cron.Hourly, "2026-01-01" }, "frequency", cron.FrequencyMessage},
		{"url scheme", func(j *cron.Job) { j.EndpointURL = "ftp://example.com" }, "endpoint_url", "endpoint_url must be an absolute http or https URL"},
		{"url credentials", func(j *cron.Job) { j.EndpointURL = "https://u:p@example.com" }, "endpoint_url", "endpoint_url must not contain credentials"},
		{"weekly needs a day", func(j *cron.Job) { j.Frequency = cron.Weekly }, "day_of_week", "day_of_week is required for weekly jobs (0-6, 0 is Sunday)"},
		{"day of week range", func(j *cron.Job) { j.Frequency, j.DayOfWeek = cron.Weekly, intp(7) }, "day_of_week", "day_of_week must be between 0 and 6 (0 is Sunday)"},
		{"day of week on daily", func(j *cron.Job) { j.DayOfWeek = intp(1) }, "day_of_week", "day_of_week is only used by weekly jobs"},
		{"monthly needs a day", func(j *cron.Job) { j.Frequency = cron.Monthly }, "day_of_month", "day_of_month is required for monthly jobs (1-31)"},
		{"day of month range", func(j *cron.Job) { j.Frequency, j.DayOfMonth = cron.Monthly, intp(0) }, "day_of_month", "day_of_month must be between 1 and 31"},
		{"custom needs an expression", func(j *cron.Job) { j.Frequency = cron.Custom }, "custom_schedule", "custom_schedule is required for custom jobs"},
		{"body with GET", func(j *cron.Job) { j.Method, j.Body = "GET", json.RawMessage(`{"a":1}`) }, "body", "body is sent only with POST, PUT and PATCH"},
		{"body not an object", func(j *cron.Job) { j.Body = json.RawMessage(`[1]`) }, "body", "body must be a JSON object"},
		{"header injection", func(j *cron.Job) { j.Headers = map[string]string{"X-A": "a\r\nB: c"} }, "headers.X-A", "header values may not contain line breaks or NUL"},
		{"header set by us", func(j *cron.Job) { j.Headers = map[string]string{"Idempotency-Key": "x"} }, "headers.Idempotency-Key", "header Idempotency-Key is set by the scheduler and may not be given"},
		{"timeout", func(j *cron.Job) { j.Timeout = 301 * time.Second }, "timeout_seconds", "timeout_seconds must be between 1 and 300"},
		{"retries", func(j *cron.Job) { j.Retries = 11 }, "retries", "retries must be between 0 and 10"},
		{"retry delay", func(j *cron.Job) { j.RetryDelay = 25 * time.Hour }, "retry_delay_seconds", "retry_delay_seconds must be between 1 and 86400"},
		{"success url", func(j *cron.Job) { j.SuccessURL = "ftp://example.com" }, "callbacks.success_url", "success_url must be an absolute http or https URL"},
		{"failure url credentials", func(j *cron.Job) { j.FailureURL = "https://u:p@example.com" }, "callbacks.failure_url", "failure_url must not contain credentials"},
		{"text body with GET", func(j *cron.Job) { j.Method, j.TextBody = "GET", strp("x") }, "body", "body is sent only with POST, PUT and PATCH"},
		{"tag with a comma", func(j *cron.Job) { j.Tags = []string{"ok", "a,b"} }, "tags.1", "a tag is 1 to 50 characters, without commas or control characters"},
		{"name too long", func(j *cron.Job) { j.Name = strings.Repeat("n", 201) }, "name", "name is at most 200 characters, without control characters"},
		{"every on a custom job", func(j *cron.Job) { j.Frequency, j.Every = cron.Custom, 2 }, "repeat_every", "repeat_every is only used by hourly, daily, weekly and monthly jobs"},
		{"every too large", func(j *cron.Job) {
			j.Frequency, j.Every, j.Start = cron.Monthly, 13, "2026-01-01"
			j.DayOfMonth = intp(1)
		}, "repeat_every", "repeat_every must be between 1 and 12 for monthly jobs"},
		{"every without a start", func(j *cron.Job) { j.Every = 2 }, "start", "the schedule needs the date its intervals count from"},
		{"days of week range", func(j *cron.Job) { j.Frequency, j.DaysOfWeek = cron.Weekly, []int{1, 9} }, "days_of_week.1", "days_of_week must be between 0 and 6 (0 is Sunday)"},
		{"days of week on daily", func(j *cron.Job) { j.DaysOfWeek = []int{1} }, "days_of_week", "days_of_week is only used by weekly jobs"},
		{"hourly needs a time", func(j *cron.Job) { j.Frequency, j.Time, j.Start = cron.Hourly, "", "2026-01-01" }, "time", "Field required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := validJob()
			tc.change(&j)
			_, err := cron.Validate(j, nil)
			got := fields(t, err)
			if got[tc.field] != tc.msg {
				t.Fatalf("field %s: got %q (all: %v), want %q", tc.field, got[tc.field], got, tc.msg)
			}
		})
	}
}

func TestValidateReportsAllProblemsAtOnce(t *testing.T) {
	t.Parallel()
	_, err := cron.Validate(cron.Job{Spec: cron.Spec{Frequency: "often"}}, nil)
	got := fields(t, err)
	for _, f := range []string{"endpoint_url", "method", "frequency", "time", "timezone"} {
		if _, ok := got[f]; !ok {
			t.Errorf("no problem reported for %s: %v", f, got)
		}
	}
}

func TestValidateAcceptsAGoodJob(t *testing.T) {
	t.Parallel()
	j := validJob()
	j.Headers = map[string]string{"Authorization": "Bearer x"}
	j.Body = json.RawMessage(`{"hello":"world"}`)
	j.Timeout, j.Retries = 5*time.Minute, 5
	if _, err := cron.Validate(j, nil); err != nil {
		t.Fatal(err)
	}
}

func TestIdempotencyKeyPerSlot(t *testing.T) {
	t.Parallel()
	a := cron.IdempotencyKey("crn_a", utc("2026-01-01T09:00:00Z"))
	if a != cron.IdempotencyKey("crn_a", utc("2026-01-01T10:00:00+01:00")) {
		t.Fatal("the same slot in another zone must give the same key")
	}
	if a == cron.IdempotencyKey("crn_a", utc("2026-01-02T09:00:00Z")) || a == cron.IdempotencyKey("crn_b", utc("2026-01-01T09:00:00Z")) {
		t.Fatal("keys must differ per job and slot")
	}
}

func strp(s string) *string { return &s }
