// Package cron holds the scheduled HTTP call: the job a customer defines,
// the rules its fields follow, when it runs next (in its own time zone,
// across daylight-saving changes and short months), and the record of
// each run.
package cron

import (
	"encoding/json"
	"errors"
	"slices"
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
	// Hourly runs every Every hours (elapsed time), from Time on the
	// Start date: at Time's minute past the hour where the zone's offset
	// is whole hours. The interface's routes do not offer it; the A1Cron
	// routes do.
	Hourly Frequency = "hourly"
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
	MaxRetries = 10
	// MaxRetryDelay bounds a job's own wait before each retry.
	MaxRetryDelay = 24 * time.Hour
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
	Retries int
	// RetryDelay, when above 0, is the wait before each retry; 0 leaves
	// the scheduler's backoff (10 s doubling).
	RetryDelay time.Duration
	// TextBody, when set, is sent verbatim as the body of the calls that
	// carry one, instead of Body (A1Cron jobs give their body as a
	// string). The Content-Type is the job's header, application/json
	// when it has none.
	TextBody *string
	// Name, Description and Tags describe the job to its owner; Tags
	// filter listings.
	Name        string
	Description string
	Tags        []string
	// SuccessURL and FailureURL, when set, are POSTed the outcome of each
	// run whose call ends in success, or in failure once its retries are
	// spent, signed as the account's webhook deliveries are.
	SuccessURL string
	FailureURL string
	// Origin is the API the job was made through: "" for the interface's
	// routes, OriginA1Cron for the A1Cron routes, whose jobs may also use
	// PATCH and run hourly. Either API reads, changes and deletes both.
	Origin string
	// Runs counts the scheduled runs made since the schedule was set; a
	// Spec with MaxRuns ends once it reaches them. Runs made on demand
	// (a trigger) do not count.
	Runs      int
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
	// Every spaces the runs of hourly, daily, weekly and monthly jobs:
	// every Every hours, days, weeks (of the days of DaysOfWeek or
	// DayOfWeek) or months, counted from Start. 0 or 1: every one.
	Every int
	// DaysOfWeek (0 Sunday .. 6) are the days of a weekly job that runs
	// on more than one day; one day is DayOfWeek.
	DaysOfWeek []int
	// Start is the date (DateLayout, in Timezone) intervals count from:
	// runs fall on Start's day, week (Sunday to Saturday) or month and on
	// every Every-th one after it; hourly runs are every Every hours from
	// Time on Start. Set by the use cases when the schedule is set.
	Start string
	// EndAt, when set, ends the schedule: no run is after it.
	EndAt *time.Time
	// MaxRuns, when above 0, ends the schedule once the job has made
	// that many scheduled runs (Job.Runs).
	MaxRuns int
}

// DateLayout is the form of Spec.Start.
const DateLayout = "2006-01-02"

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
	// LeaseOwner is the process that started the running attempt's call;
	// the job queue's lease on the run's queue job says whether it lives.
	LeaseOwner string
	// CallStartedAt is set, in its own commit, right before the running
	// attempt's HTTP call; nil while the call has not started.
	CallStartedAt *time.Time
	// TimedOut says the last call got no complete answer within the
	// job's timeout.
	TimedOut bool
}

// ErrNoNextRun is returned by Next when the schedule has no run within
// the horizon.
var ErrNoNextRun = errors.New("the schedule has no run within the next 366 days")

// ErrEnded is returned by Next when the schedule's end (Spec.EndAt or
// Spec.MaxRuns) is reached: the job has no more runs, which is not a
// fault of its schedule.
var ErrEnded = errors.New("the schedule has ended")

// Methods are the HTTP methods a job made through the interface's routes
// may use; A1CronMethods those of a job made through the A1Cron routes.
var (
	Methods       = []string{"GET", "POST", "PUT", "DELETE"}
	A1CronMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
)

// OriginA1Cron is the Origin of a job made through the A1Cron routes.
const OriginA1Cron = "a1cron"

// ValidMethod reports whether m is an allowed method of some job.
func ValidMethod(m string) bool { return slices.Contains(A1CronMethods, m) }

// methodsOf are the methods a job may use: its Origin's.
func methodsOf(j Job) []string {
	if j.Origin == OriginA1Cron {
		return A1CronMethods
	}
	return Methods
}

// HasBody reports whether calls with method m carry the job's body.
func HasBody(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// CallBody is what a call of the job sends: its TextBody, or its JSON
// Body; nil when the method carries none or the job has none.
func (j Job) CallBody() []byte {
	switch {
	case !HasBody(j.Method):
		return nil
	case j.TextBody != nil:
		return []byte(*j.TextBody)
	case j.Body != nil:
		return j.Body
	}
	return nil
}

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
