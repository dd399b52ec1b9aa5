package cron

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// CallbackKind is the job kind that POSTs a run's outcome to its job's
// success or failure URL.
const CallbackKind = "cron.callback"

// CallbackAttempts bounds the attempts of one callback: the first and
// retries over about two hours of the runner's backoff.
const CallbackAttempts = 14

// CallbackEvent is the x-event-type of a callback.
const CallbackEvent = "cron.execution"

// callbackPayload is a callback job's payload: what to post where, for
// whom, under which webhook-id.
type callbackPayload struct {
	AccountID string          `json:"account_id"`
	URL       string          `json:"url"`
	ID        string          `json:"id"`
	Body      json.RawMessage `json:"body"`
}

// CallbackBody is what a callback posts: the run of job cron_job_id,
// execution_id, ended in status success or failure at executed_at (when
// its last call began), with the endpoint's answer's code and time and,
// on failure, error_message.
type CallbackBody struct {
	CronJobID      string `json:"cron_job_id"`
	ExecutionID    string `json:"execution_id"`
	Status         string `json:"status"`
	ExecutedAt     string `json:"executed_at"`
	ResponseCode   int    `json:"response_code"`
	ResponseTimeMs int64  `json:"response_time_ms"`
	ErrorMessage   string `json:"error_message,omitempty"`
}

// callbackJob is the job that posts outcome o of execution e to j's
// success URL (a success) or failure URL (a failure with no retry left);
// nil when the outcome is neither or the job has no such URL.
func callbackJob(j cron.Job, e cron.Execution, o Outcome) *jobs.EnqueueParams {
	body := CallbackBody{
		CronJobID: j.ID, ExecutionID: e.ID, ExecutedAt: e.StartedAt.UTC().Format(time.RFC3339Nano),
		ResponseCode: o.ResponseCode, ResponseTimeMs: o.ResponseTimeMs,
	}
	url := ""
	switch o.Status {
	case cron.Success:
		body.Status, url = "success", j.SuccessURL
	case cron.Failed:
		body.Status, url, body.ErrorMessage = "failure", j.FailureURL, o.Error
	}
	if url == "" {
		return nil
	}
	raw, _ := json.Marshal(body)
	// The execution id, fixed for the run, is the callback's webhook-id,
	// which its every attempt carries.
	payload, _ := json.Marshal(callbackPayload{AccountID: j.AccountID, URL: url, ID: e.ID, Body: raw})
	return &jobs.EnqueueParams{
		Kind: CallbackKind, Payload: payload, AccountID: j.AccountID, EndpointKey: "cron-callback:" + j.AccountID,
		MaxAttempts: CallbackAttempts,
	}
}

// CallbackPoster posts callbacks.
type CallbackPoster interface {
	// PostSigned POSTs the JSON body to url for the account through the
	// SSRF guard, without following redirects, signed as the account's
	// webhook deliveries are (webhook-id id, webhook-timestamp,
	// webhook-signature, x-timestamp, x-signature; unsigned when the
	// account has no webhook), with x-event-type event. It returns the
	// answer's status code, or an error when no answer came.
	PostSigned(ctx context.Context, accountID, id, event, url string, body []byte) (int, error)
}

// Callbacks is the handler of the callback jobs.
type Callbacks struct {
	poster CallbackPoster
}

// NewCallbacks returns the callback jobs' handler posting through poster.
func NewCallbacks(poster CallbackPoster) *Callbacks { return &Callbacks{poster: poster} }

// Work makes one attempt of a callback: a 2xx answer ends it; any other
// answer, or none, is retried with the runner's backoff until the job's
// attempts are spent.
func (c *Callbacks) Work(ctx context.Context, job jobs.Job) error {
	var p callbackPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("cron callback payload: %w", err))
	}
	status, err := c.poster.PostSigned(ctx, p.AccountID, p.ID, CallbackEvent, p.URL, p.Body)
	switch {
	case err != nil:
		return jobs.EndpointDown(fmt.Errorf("cron callback to %s: %w", p.URL, err))
	case status >= 200 && status < 300:
		return nil
	case status >= 500 || status == http.StatusTooManyRequests:
		return jobs.EndpointDown(fmt.Errorf("cron callback to %s: status %d", p.URL, status))
	}
	return fmt.Errorf("cron callback to %s: status %d", p.URL, status)
}
