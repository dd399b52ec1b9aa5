// Package jobs describes the durable background work that sends, webhook
// deliveries, emails and cron runs go through: what a use case asks to run
// (EnqueueParams), what a handler is given (Job), how a handler says that
// retrying cannot help or when to retry (Permanent, RetryAfter,
// EndpointDown), and the claim's fairness rules (ClaimFilter). Use cases
// enqueue jobs with the rows they are about, so both commit together or
// not at all; the runner (adapters/jobs) claims due jobs and calls the
// handler registered for their kind.
//
// Guarantees: at-least-once. A job whose handler returns nil runs again
// only if its worker lost the lease first (its process died, it hung past
// the lease, or it could not record the completion); handlers must
// therefore be idempotent, keyed on something stable such as the job's
// UniqueKey or the row the payload names. A run cut off by its process's
// death is no failure: the job runs again at once without using an
// attempt (see MaxInterruptions), and its handler is told (Interrupted).
package jobs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Job is one unit of background work as a handler sees it.
type Job struct {
	ID      int64
	Kind    string
	Payload []byte
	// Attempt counts runs, this one included (1 on the first run).
	Attempt     int
	MaxAttempts int
	UniqueKey   string
	PaceKey     string
	// AccountID and EndpointKey are whose work the job is and what it
	// calls (see EnqueueParams); empty when the job has none.
	AccountID   string
	EndpointKey string
	RunAt       time.Time
	CreatedAt   time.Time
	// Interrupted counts the runs of the job cut off by the death of
	// their process since its last recorded outcome (0 almost always),
	// and InterruptedAt is when the last of them started. Their outcome
	// is unknown: what they called may or may not have got the call. A
	// handler that logs attempts logs them as interrupted, not failed.
	Interrupted   int
	InterruptedAt time.Time
}

// Lease is how long a claim or a heartbeat holds the running jobs of one
// kind: until Until. Each kind has its own, so a kind that may run for
// minutes does not make a crashed worker's short jobs wait as long.
type Lease struct {
	Kind  string
	Until time.Time
}

// State is where a job is in its life.
type State string

// The states. Available and Retryable jobs are pending: due once RunAt has
// passed. Running jobs hold a lease. Completed and Cancelled jobs are pruned
// after the retention period; Dead jobs are kept until re-run.
const (
	StateAvailable State = "available"
	StateRunning   State = "running"
	StateRetryable State = "retryable"
	StateCompleted State = "completed"
	StateCancelled State = "cancelled"
	StateDead      State = "dead"
)

// DefaultMaxAttempts is how often a job runs before it is dead, unless its
// enqueuer says otherwise.
const DefaultMaxAttempts = 25

// MaxInterruptions is how many runs in a row of one job the death of their
// process may cut off without using the job's attempts: such a run did not
// fail, so the job runs again at once as if it had not started. Past it,
// each interruption counts as a failed attempt, so that a job whose every
// run kills its process cannot take the processes down forever.
const MaxInterruptions = 3

// EnqueueParams describe a job to enqueue.
type EnqueueParams struct {
	Kind    string
	Payload []byte
	// RunAt is the earliest time the job may run; zero means now.
	RunAt time.Time
	// UniqueKey, when set, makes the enqueue a no-op while a pending or
	// running job has the same key (the existing job's id is returned).
	UniqueKey string
	// PaceKey groups jobs that share a rate limit (an agent number, a bot).
	PaceKey string
	// AccountID is the account the work is for: a runner runs at most its
	// share of workers for one account at once, so one account's backlog
	// or hanging endpoint cannot take every worker. Empty: the job counts
	// against no account (operator work).
	AccountID string
	// EndpointKey names the outside endpoint the job calls (a customer's
	// webhook, an agent number at its provider, an account's attachment
	// URLs): a runner runs at most a few attempts at once to an endpoint
	// that stopped answering, and claims none of its jobs while its
	// circuit breaker is open. Each kind says what its key means. Empty:
	// no endpoint limit.
	EndpointKey string
	// MaxAttempts bounds runs; 0 means DefaultMaxAttempts.
	MaxAttempts int
}

// Validate checks the parameters an enqueuer gives.
func (p EnqueueParams) Validate() error {
	switch {
	case p.Kind == "":
		return errors.New("job kind is empty")
	case len(p.Kind) > 100:
		return errors.New("job kind is longer than 100 characters")
	case p.MaxAttempts < 0:
		return errors.New("max attempts is negative")
	case len(p.UniqueKey) > 500:
		return errors.New("unique key is longer than 500 characters")
	case len(p.AccountID) > 100:
		return errors.New("account id is longer than 100 characters")
	case len(p.EndpointKey) > 500:
		return errors.New("endpoint key is longer than 500 characters")
	}
	return nil
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the job is not retried: it goes straight to
// dead with err as its last error.
func Permanent(err error) error { return &permanentError{err: err} }

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// endpointDownError marks a failure of the endpoint a job called.
type endpointDownError struct{ err error }

func (e *endpointDownError) Error() string { return e.err.Error() }
func (e *endpointDownError) Unwrap() error { return e.err }

// EndpointDown wraps err to say that the job's endpoint failed to answer
// usefully: no connection, no answer before the timeout, or an answer that
// it is unavailable (5xx, 429). Consecutive such failures open the
// endpoint's circuit breaker in the runner. Other errors (a 4xx, a job that
// waited for another) say nothing about the endpoint's health; nil is a
// success. It combines with RetryAfter and Permanent in either order.
func EndpointDown(err error) error { return &endpointDownError{err: err} }

// IsEndpointDown reports whether err was marked EndpointDown.
func IsEndpointDown(err error) bool {
	var e *endpointDownError
	return errors.As(err, &e)
}

// retryAfterError asks for the next attempt at a given delay.
type retryAfterError struct {
	after time.Duration
	err   error
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.after, e.err)
}
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter wraps err so that the next attempt comes after d instead of the
// kind's back-off (for a provider's 429 with Retry-After).
func RetryAfter(d time.Duration, err error) error { return &retryAfterError{after: d, err: err} }

// RetryDelay returns the delay a RetryAfter error asked for.
func RetryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// Backoff says how long to wait before the next attempt, given how many
// attempts have run.
type Backoff func(attempt int) time.Duration

// ExponentialBackoff waits base·2^(attempt-1), at most max, with ±20%
// jitter so that jobs failing together do not retry in lockstep.
func ExponentialBackoff(base, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		d := max
		if attempt < 40 {
			if e := base << (attempt - 1); e > 0 && e < max {
				d = e
			}
		}
		return Jitter(d, 0.2)
	}
}

// Jitter spreads d by ±fraction.
func Jitter(d time.Duration, fraction float64) time.Duration {
	if d <= 0 {
		return 0
	}
	spread := float64(d) * fraction
	return time.Duration(float64(d) - spread + rand.Float64()*2*spread)
}

// DefaultBackoff is used for kinds registered without one: 1 s doubling up
// to one hour.
var DefaultBackoff = ExponentialBackoff(time.Second, time.Hour)

// ClaimFilter keeps claims fair across accounts and endpoints, for every
// runner of a pool at once: a claim counts the running jobs of each account
// (of the claim's kinds) in the queue itself, whichever runner holds them,
// when other runners of the pool claim too (Shared), and those of each
// bounded endpoint always. A claim visits the accounts with due jobs
// and gives each, oldest job first, up to AccountShare jobs less those
// running before any account gets more; only the rest of the claim's limit
// goes to accounts with more due (they borrow what the others leave idle),
// each up to AccountCeiling less those running. So one account's backlog
// never fills a claim while another account's job is due, and no account
// holds more than the ceiling. Jobs without an account are bounded by
// neither. A claim never takes a job whose endpoint's circuit breaker is
// open (see Breaker), but for the claimer's probe. The zero filter bounds
// nothing else.
type ClaimFilter struct {
	// Pool names the claimer's pool of workers (see RunnerPool): where its
	// claims resume visiting accounts, and whose claims take turns.
	Pool string
	// AccountShare and AccountCeiling bound one account's running jobs as
	// above, across the pool's runners; 0 is unbounded.
	AccountShare, AccountCeiling int
	// AccountsRunning counts the jobs of each account that the claimer
	// runs. Without Shared the claimer is the pool's only runner, and these
	// are all that run; with it the claim counts them in the queue.
	AccountsRunning map[string]int
	// EndpointLimit bounds the running jobs of a stalled endpoint: one in
	// StalledEndpoints, or marked stalled in its Breaker. 0 is unbounded.
	EndpointLimit int
	// StalledEndpoints are endpoints the claimer found stalled.
	StalledEndpoints []string
	// Probes are the endpoints whose half-open breaker's probe the claimer
	// took (TakeProbe): the claim takes one job of each, if none of its
	// jobs is running.
	Probes []string
	// SkipEndpoints and SkipPaceKeys are endpoint and pace keys whose jobs
	// are not claimed.
	SkipEndpoints, SkipPaceKeys []string
	// Shared says that other runners of the pool claim too: claims then
	// count the running jobs in the queue and take turns, so that two do
	// not both fill the same room.
	Shared bool
}

// RunnerPool is what the runners of a pool hold together: their workers,
// the account shares are shares of.
type RunnerPool struct {
	// Runners counts the live runners of the pool, Workers their workers.
	Runners, Workers int
}

// Breaker is the shared state of one endpoint, as every runner sees it:
// its circuit breaker and whether its limit binds. Times are measured on
// the database's clock and given as durations from the read.
type Breaker struct {
	EndpointKey string
	// Failures counts the consecutive failed attempts while closed.
	Failures int
	// Open says that the breaker is open: its jobs are not claimed. It
	// lets one probe through after OpenFor (≤ 0: now, if no Probing).
	Open    bool
	OpenFor time.Duration
	// Probing says that a probe is running.
	Probing bool
	// Stalled says that a runner found none of the endpoint's attempts
	// answering: claims bound it to their EndpointLimit.
	Stalled bool
}

// BreakerPolicy is when a breaker opens and for how long: Failures
// consecutive failed attempts open it for Open, doubling after each
// failed probe up to MaxOpen.
type BreakerPolicy struct {
	Failures      int
	Open, MaxOpen time.Duration
}

// EndpointEvent is what a runner learned about an endpoint, for its shared
// state (Breaker).
type EndpointEvent struct {
	EndpointKey string
	Outcome     EndpointOutcome
	// Probe is the job of the runner's probe the event is about (claimed,
	// or the attempt that ended), 0 for another job.
	Probe int64
}

// EndpointOutcome is what an EndpointEvent tells.
type EndpointOutcome int

const (
	// EndpointSucceeded: an attempt succeeded, closing the breaker.
	EndpointSucceeded EndpointOutcome = iota + 1
	// EndpointAnswered: an attempt got an answer that failed the job (a
	// 4xx): the endpoint is not stalled, and a probe closes the breaker.
	EndpointAnswered
	// EndpointFailed: an attempt failed without an answer (EndpointDown):
	// one more consecutive failure, or a failed probe.
	EndpointFailed
	// EndpointStalled: the runner found none of its attempts answering.
	EndpointStalled
	// EndpointProbeClaimed: the runner claimed Probe as its probe: the
	// probe runs while that job does.
	EndpointProbeClaimed
	// EndpointProbeUnused: the runner's probe did not run (no job of the
	// endpoint was claimed, or it did not start): another may probe now.
	EndpointProbeUnused
)

// Stat is the pending and running work of one kind, for metrics.
type Stat struct {
	Kind string
	// Ready counts pending jobs that are due; Scheduled those that are not.
	Ready, Scheduled, Running int
	// Retrying counts the pending jobs that failed before and wait for
	// their next attempt (state retryable); Dead the jobs that failed for
	// good. Only an account's summary counts them.
	Retrying, Dead int
	// OldestReady is when the longest-waiting due job became due.
	OldestReady time.Time
}
