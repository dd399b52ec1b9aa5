// Package cron holds the scheduled HTTP call: the job a customer defines,
// the rules its fields follow, when it runs next (in its own time zone,
// across daylight-saving changes and short months), and the record of
// each run.
package cron

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Frequency says how a job's runs are spaced.
type Frequency string

// The frequencies.
const (
	Daily   Frequency = "daily"
	Weekly  Frequency = "weekly"
	Monthly Frequency = "monthly"
	Custom  Frequency = "custom"
)

// FrequencyMessage is the validation message for an unknown frequency; the
// interface requires it to name the four allowed values.
const FrequencyMessage = "frequency must be one of daily, weekly, monthly, custom"

// Status is a job's state.
type Status string

// The job states.
const (
	Active Status = "active"
	Paused Status = "paused"
)

// ExecutionStatus is an execution's state. Only success and failed are
// shown through the API; running and retrying are the scheduler's own.
type ExecutionStatus string

// The execution states.
const (
	Running  ExecutionStatus = "running"
	Retrying ExecutionStatus = "retrying"
	Success  ExecutionStatus = "success"
	Failed   ExecutionStatus = "failed"
)

// Limits of a job's call.
const (
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = 5 * time.Minute
	// MaxRetries bounds the optional retries of a failed run.
	MaxRetries = 5
	// MaxResponseBody is the most of a response body an execution keeps.
	MaxResponseBody = 64 << 10
	// MaxHeaders bounds the headers of a job.
	MaxHeaders = 50
	// MaxBodyBytes bounds a job's request body.
	MaxBodyBytes = 64 << 10
	// Horizon is the furthest ahead a next run may be: a schedule that
	// leaves a longer gap is refused.
	Horizon = 366 * 24 * time.Hour
)

// Job is a scheduled HTTP call.
type Job struct {
	ID          string
	AccountID   string
	EndpointURL string
	Method      string
	// Headers are sent with each call.
	Headers map[string]string
	// Body is a JSON object sent with POST and PUT; nil when none.
	Body json.RawMessage
	Spec
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a failed run is tried again, never past
	// the next scheduled run.
	Retries   int
	Status    Status
	CreatedAt time.Time
	// UpdatedAt is nil until the job is first changed.
	UpdatedAt *time.Time
	// NextRunAt is the next scheduled run (a slot); nil when paused or
	// when the schedule has no next run.
	NextRunAt *time.Time
	// Version counts changes, for the scheduler and updates to agree.
	Version int64
}

// CallTimeout is the job's timeout with the default applied.
func (j Job) CallTimeout() time.Duration {
	if j.Timeout <= 0 {
		return DefaultTimeout
	}
	return j.Timeout
}

// Spec is when a job runs.
type Spec struct {
	Frequency Frequency
	// Time is the wall-clock time "HH:MM" of daily, weekly and monthly
	// runs; custom schedules carry their own times.
	Time string
	// Timezone is the IANA name the schedule is read in.
	Timezone string
	// DayOfWeek (0 Sunday .. 6) is set for weekly jobs.
	DayOfWeek *int
	// DayOfMonth (1..31) is set for monthly jobs; months without that day
	// run on their last day.
	DayOfMonth *int
	// CustomSchedule is a 5-field cron expression for custom jobs.
	CustomSchedule string
}

// Execution is one run of a job: one scheduled slot, possibly tried more
// than once.
type Execution struct {
	ID        string
	JobID     string
	AccountID string
	// Slot is the scheduled time this run is for; (JobID, Slot) is unique.
	Slot time.Time
	// StartedAt is when the (last) call began.
	StartedAt time.Time
	Status    ExecutionStatus
	// Attempt counts calls made for this slot, InterruptedAttempts among
	// them included.
	Attempt int
	// InterruptedAttempts counts the calls of this slot that were cut off
	// because their scheduler died mid-call (0 or 1): such a call is
	// retried once, with the same Idempotency-Key.
	InterruptedAttempts int
	ResponseCode        int
	ResponseTimeMs      int64
	// ResponseBody is the response as JSON: the body itself when it is
	// JSON, else a JSON string; nil when none was kept.
	ResponseBody json.RawMessage
	Error        string
	// RetryAt is when a retrying execution is tried again.
	RetryAt *time.Time
	// LeaseOwner is the scheduler that holds a running execution until
	// LeaseUntil; once that has passed, another scheduler may take it over.
	LeaseOwner string
	LeaseUntil time.Time
	// CallStartedAt is set, in its own commit, right before the running
	// attempt's HTTP call; nil while the call has not started.
	CallStartedAt *time.Time
}

// ErrNoNextRun is returned by Next when the schedule has no run within
// the horizon.
var ErrNoNextRun = errors.New("the schedule has no run within the next 366 days")

// Methods are the HTTP methods a job may use.
var Methods = []string{"GET", "POST", "PUT", "DELETE"}

// ValidMethod reports whether m is an allowed method.
func ValidMethod(m string) bool {
	for _, v := range Methods {
		if v == m {
			return true
		}
	}
	return false
}

// HasBody reports whether calls with method m carry the job's body.
func HasBody(m string) bool { return m == "POST" || m == "PUT" }

// IdempotencyKey is the Idempotency-Key header of the call for one slot:
// the same for every attempt of that slot, different for every other.
func IdempotencyKey(jobID string, slot time.Time) string {
	return jobID + ":" + slot.UTC().Format("20060102T150405Z")
}

// forbiddenHeaders are set by the scheduler itself and may not be given.
var forbiddenHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"idempotency-key": true, "te": true, "upgrade": true, "trailer": true, "keep-alive": true,
	"proxy-connection": true, "expect": true,
}

// headerProblem says what is wrong with one header, or "".
func headerProblem(name, value string) string {
	if name == "" || !isToken(name) {
		return "header names must be HTTP tokens"
	}
	if forbiddenHeaders[strings.ToLower(name)] {
		return "header " + name + " is set by the scheduler and may not be given"
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "header values may not contain line breaks or NUL"
	}
	if len(value) > 8<<10 {
		return "header values are at most 8 KiB"
	}
	return ""
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
