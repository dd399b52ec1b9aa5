package cron

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Repos is the storage of cron jobs and their executions.
//
// Errors: a lookup returns a failure of kind NotFound for a missing row and
// for a row of another account alike; when the database is away, every
// method returns a failure of kind Unavailable. Other errors are
// infrastructure failures.
type Repos interface {
	TxReads
	// Job reads one job of an account; inside a transaction on Postgres
	// the row stays locked until it ends, so a scheduler claim and an
	// update never interleave. NotFound.
	Job(ctx context.Context, accountID, id string) (cron.Job, error)
	// Jobs lists an account's jobs with the number matching.
	Jobs(ctx context.Context, q JobQuery) ([]cron.Job, int, error)
	// ChangeJob reads a job of an account, locked, and saves every field
	// of what change returns when change moved its Version on, atomically.
	// It returns the job as saved, or as read when change left the
	// Version. NotFound; when change fails, nothing is saved and its error
	// is returned.
	ChangeJob(ctx context.Context, accountID, id string, change func(cron.Job) (cron.Job, error)) (cron.Job, error)
	// DeleteJob removes a job with its executions, pending retries
	// included. NotFound when it is gone.
	DeleteJob(ctx context.Context, accountID, id string) error
	// LastExecution is the latest finished (success or failed) execution
	// of a job; ok is false when there is none.
	LastExecution(ctx context.Context, jobID string) (e cron.Execution, ok bool, err error)
	// Executions lists a job's finished executions, newest slot first.
	Executions(ctx context.Context, q ExecutionQuery) ([]cron.Execution, int, error)
	// RunCounts counts, in one statement, the finished executions of each
	// of the account's jobs among jobIDs; jobs without one, and other
	// accounts' jobs, are absent.
	RunCounts(ctx context.Context, accountID string, jobIDs []string) (map[string]RunCount, error)
	SchedulerRepos
}

// RunCount is how a job's finished executions went, and when the latest
// began.
type RunCount struct {
	Succeeded, Failed int
	LastStartedAt     time.Time
}

// SchedulerRepos is what the scheduler needs from storage. Claims lock the
// rows they return until the transaction ends and skip rows other
// transactions hold (SKIP LOCKED on Postgres; SQLite has one writer).
//
// A running execution is leased: its owner (one scheduler) holds it until
// the lease expires and renews the lease while it lives; a result or a
// call start is accepted only from the owner, so a run taken over by
// another scheduler is never made or recorded by the first.
type SchedulerRepos interface {
	// ClaimDueJobs returns up to limit active jobs whose next run is at or
	// before now, earliest first.
	ClaimDueJobs(ctx context.Context, now time.Time, limit int) ([]cron.Job, error)
	// ClaimRetries moves up to limit retrying executions whose retry time
	// is at or before now to running (attempt counted, started at now,
	// leased to lease, call not started, RetryAt kept) and returns them.
	ClaimRetries(ctx context.Context, now time.Time, lease Lease, limit int) ([]cron.Execution, error)
	// TakeOverExpired handles up to limit running executions of other
	// owners whose lease expired before now, or whose owner is a process
	// the store knows dead (its registry of processes). One whose call had not
	// started, or had started and was not interrupted before, is leased to
	// lease and returned with its call not started; in the second case it
	// counts one more attempt and one interrupted attempt, and StartedAt
	// becomes now. One whose call was interrupted a second time is recorded
	// failed with the error abandoned and counted in failed (at most limit
	// of them; the rest are left for the next call, never leased).
	TakeOverExpired(ctx context.Context, now time.Time, lease Lease, abandoned string, limit int) (taken []cron.Execution, failed int, err error)
	// RenewExecutionLeases extends the lease of every running execution of
	// lease.Owner to lease.Until and returns how many it extended.
	RenewExecutionLeases(ctx context.Context, lease Lease) (int, error)
	// StartCalls records that the calls of the given running executions
	// start at at, and returns the ids it recorded: only executions still
	// leased to owner whose call has not started yet. A call is made only
	// after its id came back from StartCalls.
	StartCalls(ctx context.Context, owner string, at time.Time, ids []string) ([]string, error)
	// JobsByID reads jobs of any account; missing ids are left out.
	JobsByID(ctx context.Context, ids []string) ([]cron.Job, error)
	// NextWake is the earliest next run of an active job or retry of an
	// execution; ok is false when there is none.
	NextWake(ctx context.Context) (at time.Time, ok bool, err error)
}

// Lease is a scheduler's hold on running executions: Owner names the
// scheduler, Until is when the hold lapses unless renewed.
type Lease struct {
	Owner string
	Until time.Time
}

// TxReads are the reads and locks a job's creation makes inside its
// transaction (see Store.Decide); their errors are Repos'.
type TxReads interface {
	// LockAccountJobs serialises the job creations of one account until
	// the transaction ends, so the per-account limit holds under
	// concurrent creates.
	LockAccountJobs(ctx context.Context, accountID string) error
	// CountJobs counts an account's jobs.
	CountJobs(ctx context.Context, accountID string) (int, error)
}

// Claims are what a scheduler's claim does inside its transaction (see
// Store.Claim): it takes rows, locked and leased to it until the
// transaction ends, and reads the jobs of what it took. Their errors are
// Repos'.
type Claims interface {
	// Job is Repos.Job: the row stays locked until the claim ends.
	Job(ctx context.Context, accountID, id string) (cron.Job, error)
	// ClaimDueJobs is SchedulerRepos.ClaimDueJobs.
	ClaimDueJobs(ctx context.Context, now time.Time, limit int) ([]cron.Job, error)
	// ClaimRetries is SchedulerRepos.ClaimRetries.
	ClaimRetries(ctx context.Context, now time.Time, lease Lease, limit int) ([]cron.Execution, error)
	// TakeOverExpired is SchedulerRepos.TakeOverExpired.
	TakeOverExpired(ctx context.Context, now time.Time, lease Lease, abandoned string, limit int) (taken []cron.Execution, failed int, err error)
	// JobsByID is SchedulerRepos.JobsByID.
	JobsByID(ctx context.Context, ids []string) ([]cron.Job, error)
}

// Runs is what a claim writes besides its leases, in this order.
type Runs struct {
	// Executions are new executions, with their lease. One for a (job,
	// slot) that has an execution already is not stored: each slot runs at
	// most once.
	Executions []cron.Execution
	// NextRuns move each job's next run (nil: none).
	NextRuns []NextRun
	// Finished are outcomes of running executions leased to the claiming
	// scheduler (status success, failed or retrying with RetryAt).
	// Outcomes of executions it no longer holds are ignored, and so are
	// their callbacks.
	Finished []Outcome
}

// Store gives the use cases their repositories, runs the decisions that
// write a batch, and the scheduler's claims.
type Store interface {
	Repos() Repos
	// Claim runs claim in a transaction, taking rows through tx, and
	// writes the Runs it returns, their outcomes as owner's, in that
	// transaction. It returns the ids of the executions it stored. When
	// claim fails, nothing is taken or written and Claim returns its
	// error.
	Claim(ctx context.Context, owner string, claim func(ctx context.Context, tx Claims) (Runs, error)) (stored []string, err error)
	// Decide runs decide in a transaction, reading through tx, and writes
	// the batch it returns in that transaction. When decide fails,
	// nothing is written and Decide returns its error. Otherwise Decide
	// returns writes.Committer's errors.
	Decide(ctx context.Context, decide func(ctx context.Context, tx TxReads) (writes.Batch, error)) error
}

// JobQuery selects an account's jobs.
type JobQuery struct {
	AccountID string
	// Status filters when set.
	Status cron.Status
	// Tags, when set, keep the jobs that carry every one of them.
	Tags []string
	// Search, when set, keeps the jobs whose name, description or
	// endpoint URL contains it, ignoring ASCII case.
	Search        string
	Limit, Offset int
}

// ExecutionQuery selects a job's executions.
type ExecutionQuery struct {
	JobID string
	// Status filters when set (success, failed or retrying); else the
	// finished executions are listed, and the retrying ones too when
	// WithRetrying.
	Status       cron.ExecutionStatus
	WithRetrying bool
	// TimedOut, when set, keeps the executions whose last call timed out
	// (true) or did not (false).
	TimedOut *bool
	// From and To, when set, keep the executions that started in
	// [From, To].
	From, To      *time.Time
	Limit, Offset int
}

// NextRun is a job's new next run. Ran says the job made a scheduled run
// (its Runs count one more).
type NextRun struct {
	JobID string
	At    *time.Time
	Ran   bool
}

// Outcome is the recorded result of one call.
type Outcome struct {
	ExecutionID    string
	Status         cron.ExecutionStatus
	ResponseCode   int
	ResponseTimeMs int64
	ResponseBody   []byte
	Error          string
	// RetryAt is set when Status is Retrying.
	RetryAt    *time.Time
	FinishedAt time.Time
	// TimedOut says no complete answer came within the job's timeout.
	TimedOut bool
	// Callback, when set, is the job that posts the outcome to the job's
	// success or failure URL; it is enqueued with the outcome, only if
	// the outcome is recorded.
	Callback *jobs.EnqueueParams
}

// URLChecker refuses endpoint URLs on private, loopback or link-local
// addresses when a job is saved.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// Request is one call of a job's endpoint.
type Request struct {
	URL     string
	Method  string
	Headers map[string]string
	// Body is sent as JSON when not nil.
	Body           []byte
	Timeout        time.Duration
	IdempotencyKey string
}

// Response is what the endpoint answered. Err is set when no response
// arrived (timeout, refused address, connection error); Body holds at most
// cron.MaxResponseBody bytes.
type Response struct {
	StatusCode int
	Body       []byte
	Elapsed    time.Duration
	Err        error
}

// Caller makes the HTTP calls, through the SSRF-safe client, without
// following redirects.
type Caller interface {
	Call(ctx context.Context, req Request) Response
}

// Clock is the scheduler's time: Now, and a timer that fires after d.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// function that releases the timer early.
	After(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// After is a time.Timer.
func (SystemClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
