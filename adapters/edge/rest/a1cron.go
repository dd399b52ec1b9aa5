package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// The A1Cron routes: A1Base's cron API (the client in its Next.js
// template, lib/a1cron) over the same jobs, engine and store as the
// interface's /cron-jobs routes, with A1Cron's paths, job model,
// {data: …} envelopes and execution statuses.

// CronTrigger runs a job now and answers its execution (the cron runs'
// handler's Trigger).
type CronTrigger interface {
	Trigger(ctx context.Context, accountID, id string) (cron.Execution, error)
}

// The A1Cron list bounds.
const (
	a1DefaultPageSize = 20
	a1MaxPageSize     = 100
	a1DefaultLogs     = 50
	a1MaxLogs         = 100
)

func (s *server) mountA1Cron(api *edge.Routes) {
	if s.cron == nil {
		return
	}
	api.Handle(http.MethodGet, "/cron-jobs/{accountId}/list", s.a1List)
	api.Handle(http.MethodPost, "/cron-jobs/{accountId}/create", s.idempotentAnswering(s.a1Create))
	api.Handle(http.MethodGet, "/cron-jobs/{accountId}/details/{id}", s.a1Details)
	api.Handle(http.MethodPatch, "/cron-jobs/{accountId}/update/{id}", s.a1Update)
	api.Handle(http.MethodDelete, "/cron-jobs/{accountId}/delete/{id}", s.a1Delete)
	if s.cronTrigger != nil {
		api.Handle(http.MethodPost, "/cron-jobs/{accountId}/trigger/{id}", s.idempotent(s.a1Trigger))
	}
	api.Handle(http.MethodGet, "/cron-jobs/{accountId}/logs/{id}", s.a1Logs)
}

// a1JobBody is an A1Cron job as created or updated; every field is
// optional in an update.
type a1JobBody struct {
	Name           *string            `json:"name"`
	Description    *string            `json:"description"`
	EndpointURL    *string            `json:"endpoint_url"`
	Method         *string            `json:"method"`
	Headers        *map[string]string `json:"headers"`
	Body           *string            `json:"body"`
	Timezone       *string            `json:"timezone"`
	ScheduleConfig *a1Schedule        `json:"schedule_config"`
	RetryConfig    *a1Retry           `json:"retry_config"`
	Callbacks      *a1Callbacks       `json:"callbacks"`
	Tags           *[]string          `json:"tags"`
	IsActive       *bool              `json:"is_active"`
}

// a1Schedule is A1Cron's schedule_config.
type a1Schedule struct {
	RepeatType     *string `json:"repeat_type"`
	RepeatEvery    *int    `json:"repeat_every"`
	Time           *string `json:"time"`
	DaysOfWeek     []a1Day `json:"days_of_week"`
	EndType        *string `json:"end_type"`
	EndDate        *string `json:"end_date"`
	EndOccurrences *int    `json:"end_occurrences"`
}

// a1Day is a day of the week as A1Cron's clients give it: a numeric
// string ("1", as the template sends) or a number.
type a1Day string

func (d *a1Day) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = a1Day(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: jsonStringType}
	}
	*d = a1Day(n.String())
	return nil
}

var jsonStringType = reflect.TypeOf("")

type a1Retry struct {
	MaxRetries        *int `json:"max_retries"`
	RetryDelaySeconds *int `json:"retry_delay_seconds"`
	TimeoutSeconds    *int `json:"timeout_seconds"`
}

type a1Callbacks struct {
	SuccessURL *string `json:"success_url"`
	FailureURL *string `json:"failure_url"`
}

// a1RepeatTypes map A1Cron's repeat_type to the engine's frequencies.
var a1RepeatTypes = map[string]cron.Frequency{"hourly": cron.Hourly, "days": cron.Daily, "weeks": cron.Weekly, "months": cron.Monthly}

// spec maps a schedule_config to the engine's schedule: hourly, days,
// weeks (on days_of_week) and months (on the 1st) every repeat_every,
// ending never, on end_date (a date ends at the end of that day in zone)
// or after end_occurrences runs. Problems are named by their A1Cron path.
func (sc a1Schedule) spec(zone string, p *failure.Problems) cron.Spec {
	var out cron.Spec
	field := func(name string, more ...any) []any { return append([]any{"schedule_config", name}, more...) }
	switch {
	case sc.RepeatType == nil:
		p.Add("missing", "Field required", field("repeat_type")...)
	case a1RepeatTypes[*sc.RepeatType] == "":
		p.Add("enum", "repeat_type must be one of hourly, days, weeks, months", field("repeat_type")...)
	default:
		out.Frequency = a1RepeatTypes[*sc.RepeatType]
	}
	out.Every = 1
	if sc.RepeatEvery != nil {
		if *sc.RepeatEvery < 1 {
			p.Add("greater_than_equal", "repeat_every must be at least 1", field("repeat_every")...)
		}
		out.Every = *sc.RepeatEvery
	}
	if sc.Time == nil {
		p.Add("missing", "Field required", field("time")...)
	} else {
		out.Time = *sc.Time
	}
	var days []int
	for i, d := range sc.DaysOfWeek {
		n, err := strconv.Atoi(string(d))
		if err != nil || n < 0 || n > 6 {
			p.Add("value_error", `days_of_week are the days 0 to 6 ("0" is Sunday, "1" Monday)`, field("days_of_week", i)...)
			continue
		}
		if !slices.Contains(days, n) {
			days = append(days, n)
		}
	}
	slices.Sort(days)
	switch {
	case len(days) == 1:
		out.DayOfWeek = &days[0]
	case len(days) > 1:
		out.DaysOfWeek = days
	}
	if out.Frequency == cron.Monthly {
		first := 1
		out.DayOfMonth = &first
	}
	endType := "never"
	if sc.EndType != nil {
		endType = *sc.EndType
	}
	switch endType {
	case "never":
	case "on":
		if sc.EndDate == nil {
			p.Add("missing", "end_date is required when end_type is on", field("end_date")...)
			break
		}
		end, ok := endOf(*sc.EndDate, zone)
		if !ok {
			p.Add("value_error", "end_date must be a date (2026-12-31) or a date-time (2026-12-31T18:00:00Z)", field("end_date")...)
			break
		}
		out.EndAt = &end
	case "after":
		if sc.EndOccurrences == nil {
			p.Add("missing", "end_occurrences is required when end_type is after", field("end_occurrences")...)
			break
		}
		if *sc.EndOccurrences < 1 {
			p.Add("greater_than_equal", "end_occurrences must be at least 1", field("end_occurrences")...)
		}
		out.MaxRuns = *sc.EndOccurrences
	default:
		p.Add("enum", "end_type must be one of never, on, after", field("end_type")...)
	}
	return out
}

// endOf reads an end_date: a date-time is that instant; a date ends at the
// end of that day in zone (in UTC when zone is not a known zone).
func endOf(v, zone string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), true
	}
	d, err := time.Parse(cron.DateLayout, v)
	if err != nil {
		return time.Time{}, false
	}
	loc := time.UTC
	if l, err := cron.LoadZone(zone); err == nil {
		loc = l
	}
	return time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc).Add(-time.Microsecond).UTC(), true
}

// a1FieldPaths are where the engine's validation names A1Cron fields.
var a1FieldPaths = map[string][]any{
	"frequency":           {"schedule_config", "repeat_type"},
	"time":                {"schedule_config", "time"},
	"day_of_week":         {"schedule_config", "days_of_week"},
	"days_of_week":        {"schedule_config", "days_of_week"},
	"day_of_month":        {"schedule_config"},
	"repeat_every":        {"schedule_config", "repeat_every"},
	"end_occurrences":     {"schedule_config", "end_occurrences"},
	"start":               {"schedule_config"},
	"custom_schedule":     {"schedule_config"},
	"timeout_seconds":     {"retry_config", "timeout_seconds"},
	"retries":             {"retry_config", "max_retries"},
	"retry_delay_seconds": {"retry_config", "retry_delay_seconds"},
}

// a1Failure renames the fields of a validation failure to their A1Cron
// paths; other failures pass unchanged.
func a1Failure(err error) error {
	fe := failure.As(err)
	if fe.Kind != failure.KindInvalid || len(fe.Fields) == 0 {
		return err
	}
	fields := slices.Clone(fe.Fields)
	for i, f := range fields {
		if len(f.Path) == 0 {
			continue
		}
		if name, ok := f.Path[0].(string); ok && a1FieldPaths[name] != nil {
			fields[i].Path = append(slices.Clone(a1FieldPaths[name]), f.Path[1:]...)
		}
	}
	return failure.Invalid(fields...)
}

// job maps a create body to a job.
func (b a1JobBody) job(p *failure.Problems) cron.Job {
	required(p, b.Name, "name")
	required(p, b.EndpointURL, "endpoint_url")
	required(p, b.Method, "method")
	required(p, b.Timezone, "timezone")
	required(p, b.ScheduleConfig, "schedule_config")
	j := cron.Job{
		Origin: cron.OriginA1Cron, Name: str(b.Name), Description: str(b.Description), EndpointURL: str(b.EndpointURL),
		Method: strings.ToUpper(str(b.Method)), TextBody: b.Body, Status: cron.Active,
	}
	if b.Headers != nil {
		j.Headers = *b.Headers
	}
	if b.ScheduleConfig != nil {
		j.Spec = b.ScheduleConfig.spec(str(b.Timezone), p)
	}
	j.Timezone = str(b.Timezone)
	if b.RetryConfig != nil {
		if b.RetryConfig.MaxRetries != nil {
			j.Retries = *b.RetryConfig.MaxRetries
		}
		j.RetryDelay = secondsOf(b.RetryConfig.RetryDelaySeconds)
		j.Timeout = timeoutOf(b.RetryConfig.TimeoutSeconds)
	}
	if b.Callbacks != nil {
		j.SuccessURL, j.FailureURL = str(b.Callbacks.SuccessURL), str(b.Callbacks.FailureURL)
	}
	if b.Tags != nil {
		j.Tags = *b.Tags
	}
	if b.IsActive != nil && !*b.IsActive {
		j.Status = cron.Paused
	}
	return j
}

// secondsOf is a duration in seconds given by a client; nil is 0 and a
// value below 1 a negative duration, which validation refuses.
func secondsOf(seconds *int) time.Duration {
	if seconds == nil {
		return 0
	}
	if *seconds <= 0 {
		return -1
	}
	return time.Duration(*seconds) * time.Second
}

func given[T any](v *T) appcron.Value[T] {
	if v == nil {
		return appcron.Value[T]{}
	}
	return appcron.Value[T]{Set: true, V: *v}
}

// patch maps an update body to a patch: the fields given replace the
// job's; a schedule_config replaces the whole schedule; retry_config and
// callbacks change the sub-fields given. zone reads a date-only end_date.
func (b a1JobBody) patch(zone string, p *failure.Problems) appcron.Patch {
	out := appcron.Patch{
		Name: given(b.Name), Description: given(b.Description), EndpointURL: given(b.EndpointURL),
		Headers: given(b.Headers), TextBody: given(b.Body), Timezone: given(b.Timezone), Tags: given(b.Tags), Active: given(b.IsActive),
	}
	if b.Method != nil {
		out.Method = appcron.Value[string]{Set: true, V: strings.ToUpper(*b.Method)}
	}
	if b.ScheduleConfig != nil {
		if b.Timezone != nil {
			zone = *b.Timezone
		}
		out.Schedule = appcron.Value[cron.Spec]{Set: true, V: b.ScheduleConfig.spec(zone, p)}
	}
	if rc := b.RetryConfig; rc != nil {
		out.Retries, out.RetryDelaySeconds, out.TimeoutSeconds = given(rc.MaxRetries), given(rc.RetryDelaySeconds), given(rc.TimeoutSeconds)
	}
	if cb := b.Callbacks; cb != nil {
		out.SuccessURL, out.FailureURL = given(cb.SuccessURL), given(cb.FailureURL)
	}
	return out
}

func (s *server) a1Create(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b a1JobBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	j := b.job(&p)
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	created, err := s.cron.Create(r.Context(), principalAccount(r), j, edge.AnswerWith(key, a1CreatedAnswer))
	if err != nil {
		edge.WriteError(w, r, a1Failure(err))
		return
	}
	writeAnswer(w, a1CreatedAnswer(created))
}

// a1CreatedAnswer is the answer to a creation, as written and as recorded
// for its Idempotency-Key: the new job, which has made no run.
func a1CreatedAnswer(j cron.Job) idempotency.Response {
	return jsonAnswer(http.StatusCreated, map[string]any{"data": a1JobJSON(j, appcron.RunCount{})})
}

func (s *server) a1List(w http.ResponseWriter, r *http.Request) {
	var p failure.Problems
	q := r.URL.Query()
	limit := limitParam(r, &p, a1DefaultPageSize, a1MaxPageSize)
	page := 1
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			p = append(p, failure.FieldError{In: "query", Path: []any{"page"}, Message: "page must be a whole number from 1", Type: "greater_than_equal"})
		} else {
			page = n
		}
	}
	query := appcron.JobQuery{AccountID: principalAccount(r), Limit: limit, Offset: (page - 1) * limit, Search: q.Get("search")}
	switch v := q.Get("is_active"); v {
	case "":
	case "true":
		query.Status = cron.Active
	case "false":
		query.Status = cron.Paused
	default:
		p = append(p, failure.FieldError{In: "query", Path: []any{"is_active"}, Message: "is_active must be true or false", Type: "bool_parsing"})
	}
	for _, tag := range strings.Split(q.Get("tags"), ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			query.Tags = append(query.Tags, tag)
		}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	jobs, total, err := s.cron.List(r.Context(), query)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	counts, err := s.cron.RunCounts(r.Context(), query.AccountID, ids)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := make([]map[string]any, len(jobs))
	for i, j := range jobs {
		data[i] = a1JobJSON(j, counts[j.ID])
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": data, "pagination": map[string]int{
		"total": total, "page": page, "limit": limit, "total_pages": int(math.Ceil(float64(total) / float64(limit))),
	}})
}

// a1Job answers one job with its run counts.
func (s *server) a1Job(w http.ResponseWriter, r *http.Request, status int, j cron.Job) {
	counts, err := s.cron.RunCounts(r.Context(), j.AccountID, []string{j.ID})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, status, map[string]any{"data": a1JobJSON(j, counts[j.ID])})
}

func (s *server) a1Details(w http.ResponseWriter, r *http.Request) {
	d, err := s.cron.Get(r.Context(), principalAccount(r), mux.Vars(r)["id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	s.a1Job(w, r, http.StatusOK, d.Job)
}

func (s *server) a1Update(w http.ResponseWriter, r *http.Request) {
	var b a1JobBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	account, id := principalAccount(r), mux.Vars(r)["id"]
	zone := ""
	if b.ScheduleConfig != nil && b.Timezone == nil && b.ScheduleConfig.EndDate != nil {
		// A date-only end_date ends in the job's own zone.
		d, err := s.cron.Get(r.Context(), account, id)
		if err != nil {
			edge.WriteError(w, r, err)
			return
		}
		zone = d.Job.Timezone
	}
	var p failure.Problems
	patch := b.patch(zone, &p)
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	j, err := s.cron.Update(r.Context(), account, id, patch)
	if err != nil {
		edge.WriteError(w, r, a1Failure(err))
		return
	}
	s.a1Job(w, r, http.StatusOK, j)
}

func (s *server) a1Delete(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := s.cron.Delete(r.Context(), principalAccount(r), id); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "message": "cron job " + id + " deleted"}})
}

func (s *server) a1Trigger(w http.ResponseWriter, r *http.Request) {
	e, err := s.cronTrigger.Trigger(r.Context(), principalAccount(r), mux.Vars(r)["id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	out := map[string]any{
		"execution_id": e.ID, "cron_job_id": e.JobID, "status": a1Status(e), "response_code": e.ResponseCode,
		"response_time_ms": e.ResponseTimeMs, "executed_at": timestamp(e.StartedAt),
	}
	if body, ok := a1ResponseBody(e); ok {
		out["response_body"] = body
	}
	if e.Error != "" {
		out["error_message"] = e.Error
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": out})
}

// a1LogStatuses map A1Cron's execution statuses to the executions they
// select: success; failure (failed, not by a timeout); timeout (failed
// by a timeout); retry (failed, a retry to come).
var a1LogStatuses = map[string]func(*appcron.ExecutionQuery){
	"success": func(q *appcron.ExecutionQuery) { q.Status = cron.Success },
	"failure": func(q *appcron.ExecutionQuery) { no := false; q.Status, q.TimedOut = cron.Failed, &no },
	"timeout": func(q *appcron.ExecutionQuery) { yes := true; q.Status, q.TimedOut = cron.Failed, &yes },
	"retry":   func(q *appcron.ExecutionQuery) { q.Status = cron.Retrying },
}

// a1Status is an execution's status as A1Cron names it.
func a1Status(e cron.Execution) string {
	switch {
	case e.Status == cron.Success:
		return "success"
	case e.Status == cron.Retrying:
		return "retry"
	case e.TimedOut:
		return "timeout"
	}
	return "failure"
}

// a1ResponseBody is an execution's response body as text: a JSON string's
// value, else the JSON itself; ok is false when none was kept.
func a1ResponseBody(e cron.Execution) (string, bool) {
	if e.ResponseBody == nil {
		return "", false
	}
	var text string
	if json.Unmarshal(e.ResponseBody, &text) == nil {
		return text, true
	}
	return string(e.ResponseBody), true
}

func (s *server) a1Logs(w http.ResponseWriter, r *http.Request) {
	var p failure.Problems
	q := r.URL.Query()
	query := appcron.ExecutionQuery{JobID: mux.Vars(r)["id"], Limit: limitParam(r, &p, a1DefaultLogs, a1MaxLogs), WithRetrying: true}
	if v := q.Get("status"); v != "" {
		if pick, ok := a1LogStatuses[v]; ok {
			pick(&query)
		} else {
			p = append(p, failure.FieldError{In: "query", Path: []any{"status"}, Message: "status must be one of success, failure, timeout, retry", Type: "enum"})
		}
	}
	for name, dst := range map[string]**time.Time{"start_date": &query.From, "end_date": &query.To} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		at, ok := logBound(v, name == "end_date")
		if !ok {
			p = append(p, failure.FieldError{In: "query", Path: []any{name}, Message: name + " must be a date (2026-12-31) or a date-time (2026-12-31T18:00:00Z)", Type: "value_error"})
			continue
		}
		*dst = &at
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	execs, _, err := s.cron.Executions(r.Context(), principalAccount(r), query)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := make([]map[string]any, len(execs))
	for i, e := range execs {
		data[i] = a1LogJSON(e)
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

// logBound reads a start_date or end_date of the logs: a date-time, or a
// date, which starts at its first instant (UTC) and, as an end, ends at
// its last.
func logBound(v string, end bool) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	d, err := time.Parse(cron.DateLayout, v)
	if err != nil {
		return time.Time{}, false
	}
	if end {
		return d.AddDate(0, 0, 1).Add(-time.Microsecond), true
	}
	return d, true
}

// a1LogJSON renders one execution as A1Cron's ExecutionLog.
func a1LogJSON(e cron.Execution) map[string]any {
	out := map[string]any{
		"id": e.ID, "cron_job_id": e.JobID, "execution_id": e.ID, "status": a1Status(e), "response_code": e.ResponseCode,
		"response_time_ms": e.ResponseTimeMs, "executed_at": timestamp(e.StartedAt), "retry_attempt": e.Attempt - 1,
	}
	if body, ok := a1ResponseBody(e); ok {
		out["response_body"] = body
	}
	if e.Error != "" && e.Status != cron.Success {
		out["error_message"] = e.Error
	}
	if e.RetryAt != nil && e.Status == cron.Retrying {
		out["next_retry_at"] = timestamp(*e.RetryAt)
	}
	return out
}

// a1RepeatType is A1Cron's name of a frequency; custom for the
// interface's cron expressions, which A1Cron has no name for.
func a1RepeatType(f cron.Frequency) string {
	for name, freq := range a1RepeatTypes {
		if freq == f {
			return name
		}
	}
	return string(f)
}

// a1Days are a job's days of the week as A1Cron gives them.
func a1Days(j cron.Job) []string {
	days := slices.Clone(j.DaysOfWeek)
	if j.DayOfWeek != nil {
		days = append(days, *j.DayOfWeek)
	}
	slices.Sort(days)
	out := make([]string, 0, len(days))
	for _, d := range slices.Compact(days) {
		out = append(out, strconv.Itoa(d))
	}
	return out
}

// a1ScheduleText is a job's schedule as one 5-field cron expression when
// one says it exactly, else in words.
func a1ScheduleText(j cron.Job) string {
	if j.Frequency == cron.Custom {
		return j.CustomSchedule
	}
	hour, minute, _ := cron.ParseClock(j.Time)
	every := max(j.Every, 1)
	days := strings.Join(a1Days(j), ",")
	dom := 1
	if j.DayOfMonth != nil {
		dom = *j.DayOfMonth
	}
	switch {
	case j.Frequency == cron.Hourly && every == 1:
		return fmt.Sprintf("%d * * * *", minute)
	case j.Frequency == cron.Hourly:
		return fmt.Sprintf("every %d hours from %s on %s", every, j.Time, j.Start)
	case every > 1 && j.Frequency == cron.Daily:
		return fmt.Sprintf("every %d days at %s from %s", every, j.Time, j.Start)
	case every > 1 && j.Frequency == cron.Weekly:
		return fmt.Sprintf("every %d weeks on days %s at %s from %s", every, days, j.Time, j.Start)
	case every > 1 && j.Frequency == cron.Monthly:
		return fmt.Sprintf("every %d months on day %d at %s from %s", every, dom, j.Time, j.Start)
	case j.Frequency == cron.Weekly:
		return fmt.Sprintf("%d %d * * %s", minute, hour, days)
	case j.Frequency == cron.Monthly:
		return fmt.Sprintf("%d %d %d * *", minute, hour, dom)
	}
	return fmt.Sprintf("%d %d * * *", minute, hour)
}

// a1JobJSON renders a job as A1Cron's CronJob, with its run counts.
func a1JobJSON(j cron.Job, runs appcron.RunCount) map[string]any {
	schedule := map[string]any{"repeat_type": a1RepeatType(j.Frequency), "repeat_every": max(j.Every, 1), "time": j.Time, "end_type": "never"}
	if j.Frequency == cron.Weekly {
		schedule["days_of_week"] = a1Days(j)
	}
	if j.Frequency == cron.Monthly && j.DayOfMonth != nil {
		schedule["day_of_month"] = *j.DayOfMonth
	}
	switch {
	case j.EndAt != nil:
		schedule["end_type"], schedule["end_date"] = "on", timestamp(*j.EndAt)
	case j.MaxRuns > 0:
		schedule["end_type"], schedule["end_occurrences"] = "after", j.MaxRuns
	}
	callbacks := map[string]any{}
	if j.SuccessURL != "" {
		callbacks["success_url"] = j.SuccessURL
	}
	if j.FailureURL != "" {
		callbacks["failure_url"] = j.FailureURL
	}
	headers := j.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	tags := j.Tags
	if tags == nil {
		tags = []string{}
	}
	updated := j.CreatedAt
	if j.UpdatedAt != nil {
		updated = *j.UpdatedAt
	}
	out := map[string]any{
		"id": j.ID, "name": j.Name, "description": j.Description, "endpoint_url": j.EndpointURL, "schedule": a1ScheduleText(j),
		"method": j.Method, "headers": headers, "timezone": j.Timezone, "schedule_config": schedule,
		"retry_config": map[string]any{"max_retries": j.Retries, "retry_delay_seconds": int(j.RetryDelay / time.Second), "timeout_seconds": int(j.CallTimeout() / time.Second)},
		"callbacks":    callbacks, "tags": tags, "is_active": j.Status == cron.Active, "runs_made": j.Runs,
		"created_at": timestamp(j.CreatedAt), "updated_at": timestamp(updated),
		"total_executions": runs.Succeeded + runs.Failed, "successful_executions": runs.Succeeded, "failed_executions": runs.Failed,
	}
	switch {
	case j.TextBody != nil:
		out["body"] = *j.TextBody
	case j.Body != nil:
		out["body"] = string(j.Body)
	}
	if j.NextRunAt != nil && j.Status == cron.Active {
		out["next_run_at"] = timestamp(*j.NextRunAt)
	}
	if !runs.LastStartedAt.IsZero() {
		out["last_run_at"] = timestamp(runs.LastStartedAt)
	}
	return out
}
