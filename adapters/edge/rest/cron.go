package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// CronUseCases is what the REST adapter needs from the cron use cases.
type CronUseCases interface {
	Create(ctx context.Context, accountID string, j cron.Job, answer *idempotency.Completion[cron.Job]) (cron.Job, error)
	List(ctx context.Context, q appcron.JobQuery) ([]cron.Job, int, error)
	Get(ctx context.Context, accountID, id string) (appcron.JobDetails, error)
	Update(ctx context.Context, accountID, id string, p appcron.Patch) (cron.Job, error)
	Pause(ctx context.Context, accountID, id string) (cron.Job, error)
	Resume(ctx context.Context, accountID, id string) (cron.Job, error)
	Delete(ctx context.Context, accountID, id string) error
	Executions(ctx context.Context, accountID string, q appcron.ExecutionQuery) ([]cron.Execution, int, error)
	RunCounts(ctx context.Context, accountID string, jobIDs []string) (map[string]appcron.RunCount, error)
}

func (s *server) mountCron(api *edge.Routes) {
	if s.cron == nil {
		return
	}
	// The cron routes alone take a bearer key as a full credential
	// (api is the host's APIWithBearerKey).
	api.Handle(http.MethodPost, "/cron-jobs", s.idempotentAnswering(s.createCronJob))
	api.Handle(http.MethodGet, "/cron-jobs", s.listCronJobs)
	api.Handle(http.MethodGet, "/cron-jobs/{id}", s.getCronJob)
	api.Handle(http.MethodPatch, "/cron-jobs/{id}", s.patchCronJob)
	api.Handle(http.MethodDelete, "/cron-jobs/{id}", s.deleteCronJob)
	api.Handle(http.MethodPost, "/cron-jobs/{id}/pause", s.idempotent(s.pauseCronJob))
	api.Handle(http.MethodPost, "/cron-jobs/{id}/resume", s.idempotent(s.resumeCronJob))
	api.Handle(http.MethodGet, "/cron-jobs/{id}/executions", s.cronExecutions)
}

func principalAccount(r *http.Request) string {
	p, _ := accounts.PrincipalFrom(r.Context())
	return p.AccountID
}

// cronJobBody is the create body.
type cronJobBody struct {
	EndpointURL    *string           `json:"endpoint_url"`
	Frequency      *string           `json:"frequency"`
	Time           *string           `json:"time"`
	Timezone       *string           `json:"timezone"`
	Method         *string           `json:"method"`
	Headers        map[string]string `json:"headers"`
	Body           json.RawMessage   `json:"body"`
	DayOfWeek      *int              `json:"day_of_week"`
	DayOfMonth     *int              `json:"day_of_month"`
	CustomSchedule *string           `json:"custom_schedule"`
	TimeoutSeconds *int              `json:"timeout_seconds"`
	Retries        *int              `json:"retries"`
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func timeoutOf(seconds *int) time.Duration {
	if seconds == nil {
		return 0
	}
	if *seconds <= 0 {
		return -1 // refused by validation
	}
	return time.Duration(*seconds) * time.Second
}

func (s *server) createCronJob(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b cronJobBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	j := cron.Job{
		EndpointURL: str(b.EndpointURL), Method: str(b.Method), Headers: b.Headers,
		Spec: cron.Spec{
			Frequency: cron.Frequency(str(b.Frequency)), Time: str(b.Time), Timezone: str(b.Timezone),
			DayOfWeek: b.DayOfWeek, DayOfMonth: b.DayOfMonth, CustomSchedule: str(b.CustomSchedule),
		},
		Timeout: timeoutOf(b.TimeoutSeconds),
	}
	if !isNull(b.Body) {
		j.Body = b.Body
	}
	if b.Retries != nil {
		j.Retries = *b.Retries
	}
	created, err := s.cron.Create(r.Context(), principalAccount(r), j, edge.AnswerWith(key, cronCreatedAnswer))
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, cronCreatedAnswer(created))
}

// cronCreatedAnswer is the answer to a creation, as written and as recorded
// for its Idempotency-Key.
func cronCreatedAnswer(j cron.Job) idempotency.Response {
	return jsonAnswer(http.StatusCreated, cronJobJSON(j, nil, true))
}

func (s *server) listCronJobs(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := listParams(r)
	var p failure.Problems
	if err != nil {
		p = failure.As(err).Fields
	}
	status := r.URL.Query().Get("status")
	if status != "" && status != string(cron.Active) && status != string(cron.Paused) {
		p = append(p, failure.FieldError{In: "query", Path: []any{"status"}, Message: "status must be one of active, paused", Type: "enum"})
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	jobs, total, err := s.cron.List(r.Context(), appcron.JobQuery{AccountID: principalAccount(r), Status: cron.Status(status), Limit: limit, Offset: offset})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := make([]map[string]any, len(jobs))
	for i, j := range jobs {
		data[i] = cronJobJSON(j, nil, false)
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]int{"total": total, "limit": limit, "offset": offset}})
}

func (s *server) getCronJob(w http.ResponseWriter, r *http.Request) {
	d, err := s.cron.Get(r.Context(), principalAccount(r), mux.Vars(r)["id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, cronJobJSON(d.Job, d.Last, true))
}

// cronPatchBody is the update body: each field raw, so that absent, null
// and a value can be told apart.
type cronPatchBody struct {
	EndpointURL    json.RawMessage `json:"endpoint_url"`
	Frequency      json.RawMessage `json:"frequency"`
	Time           json.RawMessage `json:"time"`
	Timezone       json.RawMessage `json:"timezone"`
	Method         json.RawMessage `json:"method"`
	Headers        json.RawMessage `json:"headers"`
	Body           json.RawMessage `json:"body"`
	DayOfWeek      json.RawMessage `json:"day_of_week"`
	DayOfMonth     json.RawMessage `json:"day_of_month"`
	CustomSchedule json.RawMessage `json:"custom_schedule"`
	TimeoutSeconds json.RawMessage `json:"timeout_seconds"`
	Retries        json.RawMessage `json:"retries"`
}

// patchValue reads one update field.
func patchValue[T any](raw json.RawMessage, field string, p *failure.Problems) appcron.Value[T] {
	var v appcron.Value[T]
	if raw == nil {
		return v
	}
	v.Set = true
	if isNull(raw) {
		v.Null = true
		return v
	}
	if err := json.Unmarshal(raw, &v.V); err != nil {
		typ, msg := expectedType(reflect.TypeOf(v.V))
		p.Add(typ, msg, field)
	}
	return v
}

func (s *server) patchCronJob(w http.ResponseWriter, r *http.Request) {
	var b cronPatchBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	patch := appcron.Patch{
		EndpointURL:    patchValue[string](b.EndpointURL, "endpoint_url", &p),
		Frequency:      patchValue[string](b.Frequency, "frequency", &p),
		Time:           patchValue[string](b.Time, "time", &p),
		Timezone:       patchValue[string](b.Timezone, "timezone", &p),
		Method:         patchValue[string](b.Method, "method", &p),
		Headers:        patchValue[map[string]string](b.Headers, "headers", &p),
		DayOfWeek:      patchValue[int](b.DayOfWeek, "day_of_week", &p),
		DayOfMonth:     patchValue[int](b.DayOfMonth, "day_of_month", &p),
		CustomSchedule: patchValue[string](b.CustomSchedule, "custom_schedule", &p),
		TimeoutSeconds: patchValue[int](b.TimeoutSeconds, "timeout_seconds", &p),
		Retries:        patchValue[int](b.Retries, "retries", &p),
	}
	if b.Body != nil {
		patch.Body = appcron.Value[json.RawMessage]{Set: true, Null: isNull(b.Body), V: b.Body}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	j, err := s.cron.Update(r.Context(), principalAccount(r), mux.Vars(r)["id"], patch)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, cronJobJSON(j, nil, true))
}

func (s *server) pauseCronJob(w http.ResponseWriter, r *http.Request) {
	s.cronStatus(w, r, s.cron.Pause)
}

func (s *server) resumeCronJob(w http.ResponseWriter, r *http.Request) {
	s.cronStatus(w, r, s.cron.Resume)
}

func (s *server) cronStatus(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, accountID, id string) (cron.Job, error)) {
	j, err := change(r.Context(), principalAccount(r), mux.Vars(r)["id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"id": j.ID, "status": j.Status, "next_execution": nextExecution(j)})
}

func (s *server) deleteCronJob(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := s.cron.Delete(r.Context(), principalAccount(r), id); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

func (s *server) cronExecutions(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := listParams(r)
	var p failure.Problems
	if err != nil {
		p = failure.As(err).Fields
	}
	status := r.URL.Query().Get("status")
	if status != "" && status != string(cron.Success) && status != string(cron.Failed) {
		p = append(p, failure.FieldError{In: "query", Path: []any{"status"}, Message: "status must be one of success, failed", Type: "enum"})
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	execs, total, err := s.cron.Executions(r.Context(), principalAccount(r), appcron.ExecutionQuery{
		JobID: mux.Vars(r)["id"], Status: cron.ExecutionStatus(status), Limit: limit, Offset: offset,
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := make([]map[string]any, len(execs))
	for i, e := range execs {
		data[i] = executionJSON(e)
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]int{"total": total, "limit": limit, "offset": offset}})
}

// nextExecution is the next run in the job's zone, with its UTC offset;
// nil when there is none.
func nextExecution(j cron.Job) any {
	if j.NextRunAt == nil || j.Status != cron.Active {
		return nil
	}
	t := *j.NextRunAt
	if loc, err := cron.LoadZone(j.Timezone); err == nil {
		t = t.In(loc)
	}
	// Numeric offset even when it is zero (London in winter: +00:00), so
	// the value always shows the zone's offset.
	return t.Format("2006-01-02T15:04:05-07:00")
}

// cronJobJSON renders a job; the list form (full false) leaves out
// headers and body.
func cronJobJSON(j cron.Job, last *cron.Execution, full bool) map[string]any {
	out := map[string]any{
		"id": j.ID, "endpoint_url": j.EndpointURL, "frequency": j.Frequency, "timezone": j.Timezone,
		"method": j.Method, "status": j.Status, "created_at": timestamp(j.CreatedAt),
		"next_execution": nextExecution(j), "timeout_seconds": int(j.CallTimeout() / time.Second), "retries": j.Retries,
	}
	if j.Time != "" {
		out["time"] = j.Time
	}
	if j.DayOfWeek != nil {
		out["day_of_week"] = *j.DayOfWeek
	}
	if j.DayOfMonth != nil {
		out["day_of_month"] = *j.DayOfMonth
	}
	if j.CustomSchedule != "" {
		out["custom_schedule"] = j.CustomSchedule
	}
	if j.UpdatedAt != nil {
		out["updated_at"] = timestamp(*j.UpdatedAt)
	}
	if full {
		headers := j.Headers
		if headers == nil {
			headers = map[string]string{}
		}
		out["headers"] = headers
		if j.Body != nil {
			out["body"] = j.Body
		}
	}
	if last != nil {
		out["last_execution"] = map[string]any{
			"id": last.ID, "timestamp": timestamp(last.StartedAt), "status": last.Status,
			"response_code": last.ResponseCode, "response_time_ms": last.ResponseTimeMs,
		}
	}
	return out
}

func executionJSON(e cron.Execution) map[string]any {
	out := map[string]any{
		"id": e.ID, "cron_job_id": e.JobID, "timestamp": timestamp(e.StartedAt), "scheduled_for": timestamp(e.Slot),
		"status": e.Status, "response_code": e.ResponseCode, "response_time_ms": e.ResponseTimeMs, "attempts": e.Attempt,
	}
	if e.ResponseBody != nil {
		out["response_body"] = e.ResponseBody
	}
	if e.Status == cron.Failed {
		out["error"] = e.Error
	}
	// Only when a crash cut a call off: that call was retried with the
	// same Idempotency-Key, so the endpoint may have seen the slot twice.
	if e.InterruptedAttempts > 0 {
		out["interrupted_attempts"] = e.InterruptedAttempts
	}
	return out
}
