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
	// the row stays locked until it ends, so an enqueuer's claim and an
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
	// DeleteJob removes a job with its executions, pending runs and
	// retries included (their queue jobs find them gone). NotFound when
	// it is gone.
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

// SchedulerRepos is what the periodic enqueuer and the run handler need
// from storage. A run is an execution row (unique per job and slot) and a
// job of the queue (kind RunKind) that makes its call: the queue's lease
// and rescue take a run over when its process dies, its retry scheduling
// times the run's retries. The execution row says how far the run got.
type SchedulerRepos interface {
	// StartRuns starts, in one write, the calls of the runs ids at at for
	// owner, and returns those it started with their jobs: a running
	// execution whose call has not started, or whose call started once
	// and was cut off (it counts one more attempt and one interrupted
	// attempt), and a retrying one whose retry time has come (one more
	// attempt). With activeOnly, only runs of active jobs start. A started
	// run has status running, StartedAt and CallStartedAt at, LeaseOwner
	// owner; its outcome is recorded only with that CallStartedAt and
	// owner (Store.Record), so a call started again elsewhere is recorded
	// once.
	StartRuns(ctx context.Context, owner string, at time.Time, ids []string, activeOnly bool) ([]Started, error)
	// Execution reads one execution with its job's status ("" when the
	// job is gone); ok is false when the execution is gone.
	Execution(ctx context.Context, id string) (e cron.Execution, jobStatus cron.Status, ok bool, err error)
	// SettleRun records the outcome of a run that was not called, only if
	// the execution is still as read (its status and attempt), and says
	// whether it did.
	SettleRun(ctx context.Context, was cron.Execution, o Outcome) (bool, error)
	// DropRun deletes a run whose call never started (its first attempt,
	// status running) and says whether it did.
	DropRun(ctx context.Context, id string) (bool, error)
	// RescheduleRun moves the pending queue job enqueued as job (the same
	// kind and payload) to at.
	RescheduleRun(ctx context.Context, job jobs.EnqueueParams, at time.Time) error
	// JobsByID reads jobs of any account; missing ids are left out.
	JobsByID(ctx context.Context, ids []string) ([]cron.Job, error)
	// NextWake is the earliest next run of an active job; ok is false
	// when there is none.
	NextWake(ctx context.Context) (at time.Time, ok bool, err error)
	// AdoptRuns enqueues, in one write, the queue jobs of up to limit runs
	// that an older release left without one (its scheduler made the
	// calls itself): retries it scheduled, and runs it claimed whose lease
	// ended before now (its process died), which it lets go of that
	// lease. enqueue gives a run's queue job from its execution and its
	// job's next run. It returns how many it adopted; concurrent callers
	// adopt each run once.
	AdoptRuns(ctx context.Context, now time.Time, limit int, enqueue func(e cron.Execution, next *time.Time) jobs.EnqueueParams) (int, error)
}

// Started is a run whose call StartRuns started, with its job.
type Started struct {
	Execution cron.Execution
	Job       cron.Job
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

// Claims are what the periodic enqueuer does inside its transaction (see
// Store.Claim): it takes due jobs, locked until the transaction ends, or
// reads one job, locked. Their errors are Repos'.
type Claims interface {
	// Job is Repos.Job: the row stays locked until the claim ends.
	Job(ctx context.Context, accountID, id string) (cron.Job, error)
	// ClaimDueJobs returns up to limit active jobs whose next run is at
	// or before now, earliest first, skipping rows other transactions
	// hold (SKIP LOCKED on Postgres; SQLite has one writer).
	ClaimDueJobs(ctx context.Context, now time.Time, limit int) ([]cron.Job, error)
}

// Run is a new execution and the queue job that makes its call (none when
// Job has no Kind: an execution recorded as it is, for imports and tests).
type Run struct {
	Execution cron.Execution
	Job       jobs.EnqueueParams
}

// Runs is what a claim writes, in this order.
type Runs struct {
	// Runs are new executions with their queue jobs. One for a (job,
	// slot) that has an execution already is not stored, nor is its
	// queue job enqueued: each slot runs at most once.
	Runs []Run
	// NextRuns move each job's next run (nil: none).
	NextRuns []NextRun
}

// Store gives the use cases their repositories, runs the decisions that
// write a batch, the enqueuer's claims, and records the calls' outcomes.
type Store interface {
	Repos() Repos
	// Claim runs claim in a transaction, taking rows through tx, and
	// writes the Runs it returns in that transaction. It returns the ids
	// of the executions it stored. When claim fails, nothing is taken or
	// written and Claim returns its error.
	Claim(ctx context.Context, claim func(ctx context.Context, tx Claims) (Runs, error)) (stored []string, err error)
	// Record writes outcomes in one transaction and returns the ids of
	// the executions it recorded: only those still running whose call
	// owner started at the outcome's CallStartedAt. The callbacks of the
	// recorded ones are enqueued with them.
	Record(ctx context.Context, owner string, outcomes []Outcome) (recorded []string, err error)
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
	ExecutionID string
	// CallStartedAt is when the call began (StartRuns' at): the outcome
	// of another start of the same run is not recorded.
	CallStartedAt  time.Time
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

// Clock is the enqueuer's and the handler's time: Now, and a timer that fires after d.
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
