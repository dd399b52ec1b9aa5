// Package cron holds the cron use cases: creating, reading, changing,
// pausing, resuming and deleting scheduled HTTP calls, reading their
// executions, and the periodic enqueuer and handler that make the calls
// as jobs of the one job queue, exactly once per scheduled slot across
// every replica.
package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// DefaultMaxJobsPerAccount bounds an account's jobs when nothing is
// configured.
const DefaultMaxJobsPerAccount = 1000

// Service runs the cron use cases.
type Service struct {
	store   Store
	parser  cron.Parser
	urls    URLChecker
	now     func() time.Time
	maxJobs int
	wake    func()
}

// Deps are what the cron use cases are built from.
type Deps struct {
	Store  Store
	Parser cron.Parser
	URLs   URLChecker
	Now    func() time.Time
	// MaxJobsPerAccount bounds each account's jobs (429 beyond);
	// DefaultMaxJobsPerAccount when 0.
	MaxJobsPerAccount int
	// Wake, when set, is called after a change that may bring a run
	// forward (create, update, resume), so this process's scheduler
	// re-reads its next wake-up at once.
	Wake func()
}

// NewService builds the cron use cases.
func NewService(d Deps) *Service {
	clock := d.Now
	if clock == nil {
		clock = time.Now
	}
	if d.MaxJobsPerAccount <= 0 {
		d.MaxJobsPerAccount = DefaultMaxJobsPerAccount
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	now := func() time.Time { return clock().Truncate(time.Microsecond) }
	return &Service{store: d.Store, parser: d.Parser, urls: d.URLs, now: now, maxJobs: d.MaxJobsPerAccount, wake: d.Wake}
}

// JobDetails is a job with its latest execution, for the single read.
type JobDetails struct {
	Job  cron.Job
	Last *cron.Execution
}

// check validates a job and computes its next run from now; urlErr is the
// verdict of its endpoint's address (checkURL), nil when it was allowed or
// did not change, and is reported when the job is otherwise valid.
//
// A schedule set without a Start counts its intervals from today in its
// zone, and a weekly one with an interval (Every) but no day runs on
// Start's weekday. A schedule whose end is reached leaves the job without
// a next run.
func (s *Service) check(j cron.Job, urlErr error) (cron.Job, error) {
	if loc, err := cron.LoadZone(j.Timezone); err == nil {
		today := s.now().In(loc)
		if j.Start == "" {
			j.Start = today.Format(cron.DateLayout)
		}
		if j.Frequency == cron.Weekly && j.DayOfWeek == nil && len(j.DaysOfWeek) == 0 && j.Every > 0 {
			if start, err := time.Parse(cron.DateLayout, j.Start); err == nil {
				day := int(start.Weekday())
				j.DayOfWeek = &day
			}
		}
	}
	plan, err := cron.Validate(j, s.parser)
	if err == nil {
		err = urlErr
	}
	if err != nil {
		return j, err
	}
	j.NextRunAt = nil
	if j.Status == cron.Active {
		next, nerr := plan.NextRun(s.now(), j.Runs)
		switch {
		case errors.Is(nerr, cron.ErrEnded):
			return j, nil
		case nerr != nil:
			return j, failure.Invalid(failure.Field("value_error", nerr.Error(), "custom_schedule"))
		}
		next = next.UTC()
		j.NextRunAt = &next
	}
	return j, nil
}

// checkURLField checks the address of the URL named name at path (an
// endpoint's or a callback's). It may resolve the host's name, so it runs
// before any transaction: a transaction waiting on a slow name server
// would hold a connection of the pool all the while, and a tenant could
// hold them all with names that answer slowly.
func (s *Service) checkURLField(ctx context.Context, url, name string, path ...any) error {
	if s.urls == nil || url == "" {
		return nil
	}
	if err := s.urls.CheckURL(ctx, url); err != nil {
		return failure.Invalid(failure.Field("value_error", name+" "+err.Error(), path...))
	}
	return nil
}

// checkURLs checks the addresses of a job's endpoint and callbacks (only
// those that differ from old's, when old is set) and joins their
// refusals.
func (s *Service) checkURLs(ctx context.Context, j cron.Job, old *cron.Job) error {
	var was cron.Job
	if old != nil {
		was = *old
	}
	urls := []struct {
		url, was, name string
		path           []any
	}{
		{j.EndpointURL, was.EndpointURL, "endpoint_url", []any{"endpoint_url"}},
		{j.SuccessURL, was.SuccessURL, "success_url", []any{"callbacks", "success_url"}},
		{j.FailureURL, was.FailureURL, "failure_url", []any{"callbacks", "failure_url"}},
	}
	var fields []failure.FieldError
	for _, u := range urls {
		if old != nil && u.url == u.was {
			continue
		}
		if err := s.checkURLField(ctx, u.url, u.name, u.path...); err != nil {
			fields = append(fields, failure.As(err).Fields...)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return failure.Invalid(fields...)
}

// Create stores a new active job for an account.
//
// answer, when set, records the answer to the creation under its
// Idempotency-Key in the transaction that stores the job, so that a crash
// cannot leave a job whose retry would create a second one.
//
// The job is active unless j's Status is Paused.
func (s *Service) Create(ctx context.Context, accountID string, j cron.Job, answer *idempotency.Completion[cron.Job]) (cron.Job, error) {
	j.ID, j.AccountID = ident.New(ident.CronJob), accountID
	if j.Status != cron.Paused {
		j.Status = cron.Active
	}
	j.CreatedAt, j.UpdatedAt, j.Version, j.Runs = s.now(), nil, 0, 0
	j, err := s.check(j, s.checkURLs(ctx, j, nil))
	if err != nil {
		return cron.Job{}, err
	}
	err = s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		if err := tx.LockAccountJobs(ctx, accountID); err != nil {
			return writes.Batch{}, err
		}
		n, err := tx.CountJobs(ctx, accountID)
		if err != nil {
			return writes.Batch{}, err
		}
		if n >= s.maxJobs {
			return writes.Batch{}, &failure.Error{Kind: failure.KindRateLimited, Code: "cron_job_limit_reached",
				Message: "this account has the most cron jobs allowed; delete one first"}
		}
		return writes.Batch{CronJobs: []cron.Job{j}, Answers: writes.Answering(answer, j)}, nil
	})
	if err != nil {
		return cron.Job{}, err
	}
	s.wake()
	return j, nil
}

// List returns an account's jobs, oldest first, and how many there are.
func (s *Service) List(ctx context.Context, q JobQuery) ([]cron.Job, int, error) {
	return s.store.Repos().Jobs(ctx, q)
}

// Get reads one job with its latest execution.
func (s *Service) Get(ctx context.Context, accountID, id string) (JobDetails, error) {
	if !ident.Valid(ident.CronJob, id) {
		return JobDetails{}, failure.NotFound("cron job")
	}
	r := s.store.Repos()
	j, err := r.Job(ctx, accountID, id)
	if err != nil {
		return JobDetails{}, err
	}
	d := JobDetails{Job: j}
	last, ok, err := r.LastExecution(ctx, id)
	if err != nil {
		return JobDetails{}, err
	}
	if ok {
		d.Last = &last
	}
	return d, nil
}

// Value is an optional field of an update: Set says it was given, Null
// that it was given as null (cleared).
type Value[T any] struct {
	Set  bool
	Null bool
	V    T
}

// Patch is an update: only the fields given change.
type Patch struct {
	EndpointURL    Value[string]
	Method         Value[string]
	Headers        Value[map[string]string]
	Body           Value[json.RawMessage]
	Frequency      Value[string]
	Time           Value[string]
	Timezone       Value[string]
	DayOfWeek      Value[int]
	DayOfMonth     Value[int]
	CustomSchedule Value[string]
	TimeoutSeconds Value[int]
	Retries        Value[int]
	// RetryDelaySeconds, TextBody, Name, Description, Tags, SuccessURL
	// and FailureURL set the cron.Job fields of those names; a TextBody
	// replaces the JSON Body, and a Body the TextBody.
	RetryDelaySeconds Value[int]
	TextBody          Value[string]
	Name              Value[string]
	Description       Value[string]
	Tags              Value[[]string]
	SuccessURL        Value[string]
	FailureURL        Value[string]
	// Schedule, when set, replaces the schedule but its time zone
	// (Timezone changes that): its intervals then count from today, and
	// its runs towards an end from zero.
	Schedule Value[cron.Spec]
	// Active, when set, resumes (true) or pauses (false) the job.
	Active Value[bool]
}

// apply changes j by p. Fields that only the old frequency used are
// cleared when the frequency changes and the update does not give them.
func (p Patch) apply(j cron.Job) (cron.Job, failure.Problems) {
	var probs failure.Problems
	str := func(v Value[string], field string, dst *string) {
		if !v.Set {
			return
		}
		if v.Null {
			probs.Add("string_type", "Input should be a valid string", field)
			return
		}
		*dst = v.V
	}
	if p.Schedule.Set && !p.Schedule.Null {
		zone := j.Timezone
		j.Spec = p.Schedule.V
		j.Timezone, j.Start, j.Runs = zone, "", 0
	}
	str(p.EndpointURL, "endpoint_url", &j.EndpointURL)
	str(p.Method, "method", &j.Method)
	str(p.Name, "name", &j.Name)
	str(p.Description, "description", &j.Description)
	str(p.SuccessURL, "success_url", &j.SuccessURL)
	str(p.FailureURL, "failure_url", &j.FailureURL)
	if p.Tags.Set {
		j.Tags = p.Tags.V
	}
	if p.TextBody.Set {
		j.TextBody, j.Body = nil, nil
		if !p.TextBody.Null {
			text := p.TextBody.V
			j.TextBody = &text
		}
	}
	if p.RetryDelaySeconds.Set {
		j.RetryDelay = 0
		if !p.RetryDelaySeconds.Null {
			j.RetryDelay = time.Duration(p.RetryDelaySeconds.V) * time.Second
			if p.RetryDelaySeconds.V <= 0 {
				j.RetryDelay = -1
			}
		}
	}
	if p.Active.Set && !p.Active.Null {
		j.Status = cron.Paused
		if p.Active.V {
			j.Status = cron.Active
		}
	}
	freq := string(j.Frequency)
	str(p.Frequency, "frequency", &freq)
	str(p.Time, "time", &j.Time)
	str(p.Timezone, "timezone", &j.Timezone)
	if p.Headers.Set {
		j.Headers = p.Headers.V
	}
	if p.Body.Set {
		j.Body, j.TextBody = nil, nil
		if !p.Body.Null {
			j.Body = p.Body.V
		}
	}
	if f := cron.Frequency(freq); f != j.Frequency {
		j.Every, j.DaysOfWeek = 0, nil
		if !p.DayOfWeek.Set {
			j.DayOfWeek = nil
		}
		if !p.DayOfMonth.Set {
			j.DayOfMonth = nil
		}
		if !p.CustomSchedule.Set {
			j.CustomSchedule = ""
		}
		j.Frequency = f
	}
	if p.DayOfWeek.Set {
		j.DayOfWeek = nil
		if !p.DayOfWeek.Null {
			v := p.DayOfWeek.V
			j.DayOfWeek = &v
		}
	}
	if p.DayOfMonth.Set {
		j.DayOfMonth = nil
		if !p.DayOfMonth.Null {
			v := p.DayOfMonth.V
			j.DayOfMonth = &v
		}
	}
	if p.CustomSchedule.Set {
		j.CustomSchedule = ""
		if !p.CustomSchedule.Null {
			j.CustomSchedule = p.CustomSchedule.V
		}
	}
	if p.TimeoutSeconds.Set {
		j.Timeout = 0
		if !p.TimeoutSeconds.Null {
			j.Timeout = time.Duration(p.TimeoutSeconds.V) * time.Second
			if p.TimeoutSeconds.V <= 0 {
				j.Timeout = -1
			}
		}
	}
	if p.Retries.Set {
		j.Retries = 0
		if !p.Retries.Null {
			j.Retries = p.Retries.V
		}
	}
	return j, probs
}

// Update changes the given fields of a job and recomputes its next run.
func (s *Service) Update(ctx context.Context, accountID, id string, p Patch) (cron.Job, error) {
	if !ident.Valid(ident.CronJob, id) {
		return cron.Job{}, failure.NotFound("cron job")
	}
	// New addresses are checked first, outside the transaction; a
	// verdict counts only if the address differs from the job's.
	var given cron.Job
	if p.EndpointURL.Set && !p.EndpointURL.Null {
		given.EndpointURL = p.EndpointURL.V
	}
	if p.SuccessURL.Set && !p.SuccessURL.Null {
		given.SuccessURL = p.SuccessURL.V
	}
	if p.FailureURL.Set && !p.FailureURL.Null {
		given.FailureURL = p.FailureURL.V
	}
	verdicts := s.checkURLs(ctx, given, nil)
	out, err := s.store.Repos().ChangeJob(ctx, accountID, id, func(j cron.Job) (cron.Job, error) {
		old := j
		j, probs := p.apply(j)
		if err := probs.Err(); err != nil {
			return j, err
		}
		j, err := s.check(j, changedURLVerdicts(verdicts, j, old))
		if err != nil {
			return j, err
		}
		now := s.now()
		j.UpdatedAt = &now
		j.Version++
		return j, nil
	})
	if err != nil {
		return cron.Job{}, err
	}
	s.wake()
	return out, nil
}

// changedURLVerdicts keeps, of the refusals of checkURLs, those of the
// addresses that j changes from old.
func changedURLVerdicts(verdicts error, j, old cron.Job) error {
	if verdicts == nil {
		return nil
	}
	changed := map[string]bool{
		"endpoint_url": j.EndpointURL != old.EndpointURL,
		"success_url":  j.SuccessURL != old.SuccessURL,
		"failure_url":  j.FailureURL != old.FailureURL,
	}
	var kept []failure.FieldError
	for _, f := range failure.As(verdicts).Fields {
		if len(f.Path) > 0 && changed[fmt.Sprint(f.Path[len(f.Path)-1])] {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return failure.Invalid(kept...)
}

// Pause stops a job's runs at once; pausing a paused job changes nothing.
func (s *Service) Pause(ctx context.Context, accountID, id string) (cron.Job, error) {
	return s.setStatus(ctx, accountID, id, cron.Paused)
}

// Resume restarts a paused job from now; resuming an active job changes
// nothing.
func (s *Service) Resume(ctx context.Context, accountID, id string) (cron.Job, error) {
	j, err := s.setStatus(ctx, accountID, id, cron.Active)
	if err == nil {
		s.wake()
	}
	return j, err
}

func (s *Service) setStatus(ctx context.Context, accountID, id string, status cron.Status) (cron.Job, error) {
	if !ident.Valid(ident.CronJob, id) {
		return cron.Job{}, failure.NotFound("cron job")
	}
	return s.store.Repos().ChangeJob(ctx, accountID, id, func(j cron.Job) (cron.Job, error) {
		if j.Status == status {
			return j, nil
		}
		j.Status = status
		j, err := s.check(j, nil)
		if err != nil {
			return j, err
		}
		now := s.now()
		j.UpdatedAt = &now
		j.Version++
		return j, nil
	})
}

// Delete removes a job; its pending runs and retries are cancelled and
// its executions removed with it.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	if !ident.Valid(ident.CronJob, id) {
		return failure.NotFound("cron job")
	}
	return s.store.Repos().DeleteJob(ctx, accountID, id)
}

// RunCounts counts the finished executions of each of the account's jobs
// among jobIDs (for listings: one read for the page).
func (s *Service) RunCounts(ctx context.Context, accountID string, jobIDs []string) (map[string]RunCount, error) {
	ids := make([]string, 0, len(jobIDs))
	for _, id := range jobIDs {
		if ident.Valid(ident.CronJob, id) {
			ids = append(ids, id)
		}
	}
	return s.store.Repos().RunCounts(ctx, accountID, ids)
}

// Executions lists a job's finished executions, newest first.
func (s *Service) Executions(ctx context.Context, accountID string, q ExecutionQuery) ([]cron.Execution, int, error) {
	if !ident.Valid(ident.CronJob, q.JobID) {
		return nil, 0, failure.NotFound("cron job")
	}
	r := s.store.Repos()
	if _, err := r.Job(ctx, accountID, q.JobID); err != nil {
		return nil, 0, err
	}
	return r.Executions(ctx, q)
}
