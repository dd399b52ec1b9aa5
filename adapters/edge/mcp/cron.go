package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

const createCronJobToolName = "create_cron_job"

var (
	frequencies = []cron.Frequency{cron.Daily, cron.Weekly, cron.Monthly, cron.Custom}
	jobStatuses = []cron.Status{cron.Active, cron.Paused}
)

func (h *Handler) addCronTools() error {
	if h.deps.Cron == nil {
		return nil
	}
	if err := addTool[createCronJobArgs, cronJob](h, &sdk.Tool{
		Name:  createCronJobToolName,
		Title: "Schedule an HTTP call",
		Description: "Create a cron job: the service calls endpoint_url with method (and headers, and body for POST and PUT) on a schedule. " +
			"frequency daily runs at time (HH:MM, 24-hour) in timezone (Area/City); weekly also takes day_of_week (0 Sunday to 6); monthly day_of_month (1-31, short months run on their last day); " +
			"custom takes custom_schedule, a 5-field cron expression, instead of time. A run succeeds when the endpoint answers 2xx. " +
			"Give an idempotency_key to make a retry safe.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
	}, h.createCronJob, oneOf(frequencies, "frequency"), oneOf(cron.Methods, "method"),
		between(0, 6, "day_of_week"), between(1, 31, "day_of_month"),
		between(1, int(cron.MaxTimeout/time.Second), "timeout_seconds"), between(0, cron.MaxRetries, "retries")); err != nil {
		return err
	}
	if err := addTool[listCronJobsArgs, cronJobList](h, &sdk.Tool{
		Name:        "list_cron_jobs",
		Title:       "List scheduled calls",
		Description: "List the account's cron jobs, newest first, optionally only active or paused ones. Page with limit and offset.",
		Annotations: readOnly,
	}, h.listCronJobs, oneOf(jobStatuses, "status"), between(1, 100, "limit"), byDefault(20, "limit"),
		atLeastZero("offset"), byDefault(0, "offset")); err != nil {
		return err
	}
	change := &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	if err := addTool[cronJobID, cronJobState](h, &sdk.Tool{
		Name: "pause_cron_job", Title: "Pause a scheduled call",
		Description: "Pause a cron job: it makes no calls until resumed. Pausing a paused job changes nothing.",
		Annotations: change,
	}, func(ctx context.Context, accountID string, in cronJobID) (any, error) {
		return jobState(h.deps.Cron.Pause(ctx, accountID, in.ID))
	}); err != nil {
		return err
	}
	if err := addTool[cronJobID, cronJobState](h, &sdk.Tool{
		Name: "resume_cron_job", Title: "Resume a scheduled call",
		Description: "Resume a paused cron job from now on (runs missed while paused are not made up). Resuming an active job changes nothing.",
		Annotations: change,
	}, func(ctx context.Context, accountID string, in cronJobID) (any, error) {
		return jobState(h.deps.Cron.Resume(ctx, accountID, in.ID))
	}); err != nil {
		return err
	}
	return addTool[cronJobID, cronJobDeleted](h, &sdk.Tool{
		Name: "delete_cron_job", Title: "Delete a scheduled call",
		Description: "Delete a cron job and its execution history, for good. A job that does not exist (or was deleted) is not_found.",
		// Deleting again changes nothing more: idempotent, though the
		// second call answers not_found.
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, accountID string, in cronJobID) (any, error) {
		if err := h.deps.Cron.Delete(ctx, accountID, in.ID); err != nil {
			return nil, err
		}
		return cronJobDeleted{ID: in.ID, Deleted: true}, nil
	})
}

// createCronJobArgs are create_cron_job's arguments.
type createCronJobArgs struct {
	EndpointURL    string            `json:"endpoint_url" jsonschema:"the public https URL to call"`
	Frequency      string            `json:"frequency"`
	Time           string            `json:"time,omitempty" jsonschema:"HH:MM, 24-hour, in timezone; not for custom"`
	Timezone       string            `json:"timezone" jsonschema:"an IANA zone of the form Area/City (Europe/London), or UTC"`
	Method         string            `json:"method"`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"HTTP headers sent with each call"`
	Body           map[string]any    `json:"body,omitempty" jsonschema:"a JSON object sent with POST and PUT"`
	DayOfWeek      *int              `json:"day_of_week,omitempty" jsonschema:"weekly: 0 Sunday to 6 Saturday"`
	DayOfMonth     *int              `json:"day_of_month,omitempty" jsonschema:"monthly: 1 to 31"`
	CustomSchedule string            `json:"custom_schedule,omitempty" jsonschema:"custom: a 5-field cron expression (30 9 * * 1-5)"`
	TimeoutSeconds *int              `json:"timeout_seconds,omitempty" jsonschema:"how long a call may take, 1 to 300 seconds (30 when absent)"`
	Retries        *int              `json:"retries,omitempty" jsonschema:"how often a failed run is tried again, 0 to 5"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"a unique string (at most 255 characters) that makes a retry safe"`
}

// cronJob is a job as the tools show it.
type cronJob struct {
	ID             string            `json:"id"`
	EndpointURL    string            `json:"endpoint_url"`
	Method         string            `json:"method"`
	Frequency      string            `json:"frequency"`
	Time           string            `json:"time,omitempty"`
	Timezone       string            `json:"timezone"`
	DayOfWeek      *int              `json:"day_of_week,omitempty"`
	DayOfMonth     *int              `json:"day_of_month,omitempty"`
	CustomSchedule string            `json:"custom_schedule,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Body           any               `json:"body,omitempty" jsonschema:"the JSON body sent with POST and PUT"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	Retries        int               `json:"retries"`
	Status         string            `json:"status" jsonschema:"active or paused"`
	NextExecution  string            `json:"next_execution,omitempty" jsonschema:"the next run, in the job's time zone with its UTC offset; absent when paused"`
	CreatedAt      string            `json:"created_at"`
	UpdatedAt      string            `json:"updated_at,omitempty"`
}

func cronJobOf(j cron.Job) cronJob {
	out := cronJob{
		ID: j.ID, EndpointURL: j.EndpointURL, Method: j.Method, Frequency: string(j.Frequency), Time: j.Time, Timezone: j.Timezone,
		DayOfWeek: j.DayOfWeek, DayOfMonth: j.DayOfMonth, CustomSchedule: j.CustomSchedule, Headers: j.Headers,
		TimeoutSeconds: int(j.CallTimeout() / time.Second), Retries: j.Retries, Status: string(j.Status),
		NextExecution: nextExecution(j), CreatedAt: timestamp(j.CreatedAt),
	}
	if j.UpdatedAt != nil {
		out.UpdatedAt = timestamp(*j.UpdatedAt)
	}
	if j.Body != nil {
		_ = json.Unmarshal(j.Body, &out.Body) // stored as the JSON it was given
	}
	return out
}

// nextExecution is the next run in the job's zone, with its UTC offset,
// as REST shows it; empty when there is none.
func nextExecution(j cron.Job) string {
	if j.NextRunAt == nil || j.Status != cron.Active {
		return ""
	}
	t := *j.NextRunAt
	if loc, err := cron.LoadZone(j.Timezone); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02T15:04:05-07:00")
}

func (h *Handler) createCronJob(ctx context.Context, accountID string, in createCronJobArgs) (any, error) {
	j := cron.Job{
		EndpointURL: in.EndpointURL, Method: in.Method, Headers: in.Headers,
		Spec: cron.Spec{
			Frequency: cron.Frequency(in.Frequency), Time: in.Time, Timezone: in.Timezone,
			DayOfWeek: in.DayOfWeek, DayOfMonth: in.DayOfMonth, CustomSchedule: in.CustomSchedule,
		},
	}
	if in.Body != nil {
		body, err := json.Marshal(in.Body)
		if err != nil {
			return nil, fmt.Errorf("encode the job's body: %w", err)
		}
		j.Body = body
	}
	if in.TimeoutSeconds != nil {
		j.Timeout = time.Duration(*in.TimeoutSeconds) * time.Second
	}
	if in.Retries != nil {
		j.Retries = *in.Retries
	}
	key := in.IdempotencyKey
	in.IdempotencyKey = ""
	return keyed(ctx, h, accountID, createCronJobToolName, key, in, func(answer *idempotency.Completion[cron.Job]) (cron.Job, error) {
		return h.deps.Cron.Create(ctx, accountID, j, answer)
	}, cronJobOf)
}

// listCronJobsArgs are list_cron_jobs' arguments.
type listCronJobsArgs struct {
	Status string `json:"status,omitempty" jsonschema:"only active or only paused jobs"`
	Limit  int    `json:"limit,omitempty" jsonschema:"jobs per page, 1 to 100"`
	Offset int    `json:"offset,omitempty" jsonschema:"jobs to skip"`
}

// cronJobList is list_cron_jobs' answer.
type cronJobList struct {
	Jobs    []cronJob `json:"jobs"`
	Total   int       `json:"total"`
	Limit   int       `json:"limit"`
	Offset  int       `json:"offset"`
	HasMore bool      `json:"has_more"`
}

func (h *Handler) listCronJobs(ctx context.Context, accountID string, in listCronJobsArgs) (any, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 20
	}
	jobs, total, err := h.deps.Cron.List(ctx, appcron.JobQuery{AccountID: accountID, Status: cron.Status(in.Status), Limit: limit, Offset: in.Offset})
	if err != nil {
		return nil, err
	}
	out := cronJobList{Jobs: make([]cronJob, len(jobs)), Total: total, Limit: limit, Offset: in.Offset, HasMore: in.Offset+len(jobs) < total}
	for i, j := range jobs {
		// The list form leaves out headers and body, as REST's does.
		j.Headers, j.Body = nil, nil
		out.Jobs[i] = cronJobOf(j)
	}
	return out, nil
}

// cronJobID names a job.
type cronJobID struct {
	ID string `json:"id" jsonschema:"the job (crn_…)"`
}

// cronJobState is the answer of pause and resume.
type cronJobState struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	NextExecution string `json:"next_execution,omitempty" jsonschema:"absent when paused"`
}

func jobState(j cron.Job, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return cronJobState{ID: j.ID, Status: string(j.Status), NextExecution: nextExecution(j)}, nil
}

// cronJobDeleted is delete_cron_job's answer.
type cronJobDeleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}
