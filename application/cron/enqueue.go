package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Enqueuer defaults.
const (
	DefaultGrace        = 5 * time.Minute
	DefaultBatch        = 1000
	DefaultClaimWorkers = 4
	DefaultPollInterval = time.Second
	// DefaultLookahead is how long before its slot a run is enqueued.
	DefaultLookahead = 2 * time.Second
	// DefaultLead is how long before its slot a run's queue job is due:
	// a worker claims it then and waits for the slot in memory, so that
	// the claim's round trips do not make the call late.
	DefaultLead = 500 * time.Millisecond
	// contendedBackoff is how long an enqueuer waits when due jobs exist
	// but another replica holds them.
	contendedBackoff = 5 * time.Millisecond
	// adoptInterval is how often an enqueuer looks for runs an older
	// release left without a queue job (Enqueuer.Adopt).
	adoptInterval = 10 * time.Second
	// minBackoff and maxBackoff bound the wait between attempts while the
	// database is away.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// RunKind is the kind of the queue jobs that make the cron calls.
const RunKind = "cron.run"

// RunAttempts bounds the queue attempts of one run: its retries (at most
// 10), a cut-off call, and the takeovers of dead workers, with room.
const RunAttempts = 100

// EnqueuerConfig tunes an Enqueuer.
type EnqueuerConfig struct {
	Store  Store
	Parser cron.Parser
	// Clock is SystemClock when nil.
	Clock Clock
	// Wakeups, when set, signals that jobs may have changed in another
	// process; the enqueuer also polls.
	Wakeups <-chan struct{}
	// Grace is how late a missed run may still be made after downtime;
	// DefaultGrace when 0.
	Grace time.Duration
	// Batch is how many jobs one claim takes; DefaultBatch when 0.
	Batch int
	// ClaimWorkers is how many claims run at once while a backlog lasts
	// (a claim that filled its batch); DefaultClaimWorkers when 0.
	ClaimWorkers int
	// PollInterval bounds how long the enqueuer sleeps without looking at
	// the database; DefaultPollInterval when 0.
	PollInterval time.Duration
	// Lookahead is how long before its slot a run is enqueued (claimed in
	// steps of half of it); DefaultLookahead when 0, none when negative.
	Lookahead time.Duration
	// Lead is how long before its slot the run's queue job is due;
	// DefaultLead when 0, none when negative. At most Lookahead.
	Lead   time.Duration
	Logger *slog.Logger
}

// Enqueuer is the periodic enqueuer: it turns the slots of the cron jobs
// into runs, jobs of the one job queue that the runner claims, leases,
// rescues and retries like any other, and whose handler is Worker. Every
// replica runs one. A claim is one transaction that locks the due job rows
// (skipping rows another replica holds), stores one execution per job for
// its slot (unique per job and slot) with its queue job, and moves each
// job's next run on. So a slot is enqueued once across replicas, and since
// the enqueue and the advance commit together, a slot is never lost while
// the database is up.
//
// A run is enqueued between half a Lookahead and a whole one before its
// slot (so a burst of many runs at one minute is written before it), its queue job due Lead before the slot; the worker that claims it
// waits for the slot in memory. A pause or delete in that time stops the
// call (the handler checks); a change of the schedule does not move it.
//
// Downtime: missed slots are not replayed. A job found late runs once,
// for its latest missed slot, if that slot is at most Grace old, and then
// moves on to its next slot after now. A clock that jumps forward is
// downtime; one that jumps back makes the next slots wait until the clock
// reaches them again (slots already run are not run again).
//
// While the database is away the enqueuer backs off (up to 2 s between
// attempts) and logs one line when the outage starts and one when it ends.
type Enqueuer struct {
	cfg    EnqueuerConfig
	clock  Clock
	log    *slog.Logger
	wake   chan struct{}
	outage *outage.Tracker
}

// NewEnqueuer builds an enqueuer; Run starts it.
func NewEnqueuer(cfg EnqueuerConfig) *Enqueuer {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.ClaimWorkers <= 0 {
		cfg.ClaimWorkers = DefaultClaimWorkers
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Lookahead == 0 {
		cfg.Lookahead = DefaultLookahead
	}
	cfg.Lookahead = max(cfg.Lookahead, 0)
	if cfg.Lead == 0 {
		cfg.Lead = DefaultLead
	}
	cfg.Lead = min(max(cfg.Lead, 0), cfg.Lookahead)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Enqueuer{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger, wake: make(chan struct{}, 1),
		outage: outage.NewTracker(cfg.Logger, "cron: the scheduler", minBackoff, maxBackoff),
	}
}

// Wake makes the enqueuer look at the database at once (a job was
// created, changed or resumed in this process).
func (s *Enqueuer) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run enqueues until ctx ends, and adopts the runs of older releases
// (Adopt) at start and every adoptInterval.
func (s *Enqueuer) Run(ctx context.Context) {
	failures := 0
	var adopted time.Time
	for ctx.Err() == nil {
		if now := s.clock.Now(); now.Sub(adopted) >= adoptInterval {
			if _, err := s.Adopt(ctx); err == nil {
				adopted = now
			} else if ctx.Err() == nil {
				s.log.Warn("cron: adopt the runs of an older release", "error", err)
			}
		}
		enqueued, err := s.Tick(ctx)
		var at time.Time
		ok := false
		if err == nil {
			at, ok, err = s.cfg.Store.Repos().NextWake(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.outage.Failed(fmt.Errorf("enqueue due runs: %w", err))
			s.sleep(ctx, backoff(failures))
			failures++
			continue
		}
		failures = 0
		s.outage.Succeeded()
		wait := s.cfg.PollInterval
		if ok {
			wait = min(wait, at.Sub(s.clock.Now())-s.cfg.Lookahead)
			switch {
			case enqueued > 0:
				// Claim in steps of half the lookahead: each run is
				// enqueued between a half and a whole lookahead before
				// its slot, with one commit per step rather than per run.
				wait = max(wait, s.cfg.Lookahead/2)
			case wait <= 0:
				// Due rows that this claim did not get are held by
				// another replica, which is about to move them on.
				wait = contendedBackoff
			}
		}
		s.sleep(ctx, wait)
	}
}

// backoff is the wait after the nth consecutive failure (0-based):
// 100 ms doubling, at most maxBackoff.
func backoff(n int) time.Duration { return outage.Backoff(n+1, minBackoff, maxBackoff) }

func (s *Enqueuer) sleep(ctx context.Context, d time.Duration) {
	c, stop := s.clock.After(d)
	defer stop()
	select {
	case <-ctx.Done():
	case <-c:
	case <-s.wake:
	case <-s.cfg.Wakeups:
	}
}

// Tick enqueues everything due within the lookahead, in batches, and
// returns how many runs it enqueued. Run calls it in a loop; tests call
// it directly with a controlled clock. A claim that fills its batch means
// a backlog (many jobs due at one minute): it is then worked off by
// ClaimWorkers claims at once, which SKIP LOCKED keeps apart.
func (s *Enqueuer) Tick(ctx context.Context) (int, error) {
	n, full, err := s.claim(ctx)
	if err != nil || !full {
		return n, err
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range s.cfg.ClaimWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, full, err := s.claim(ctx)
				mu.Lock()
				n += got
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil || !full {
					return
				}
			}
		}()
	}
	wg.Wait()
	return n, firstErr
}

// claim enqueues the runs of one batch of due jobs.
func (s *Enqueuer) claim(ctx context.Context) (n int, full bool, err error) {
	now := s.clock.Now()
	stored, err := s.cfg.Store.Claim(ctx, func(ctx context.Context, tx Claims) (Runs, error) {
		jobs, err := tx.ClaimDueJobs(ctx, now.Add(s.cfg.Lookahead), s.cfg.Batch)
		if err != nil {
			return Runs{}, err
		}
		full = len(jobs) == s.cfg.Batch
		var runs Runs
		runs.NextRuns = make([]NextRun, 0, len(jobs))
		for _, j := range jobs {
			slot, nextAt, run := s.plan(j, now)
			runs.NextRuns = append(runs.NextRuns, NextRun{JobID: j.ID, At: nextAt, Ran: run})
			if run {
				runs.Runs = append(runs.Runs, newRun(j, slot, now, slot.Add(-s.cfg.Lead), nextAt))
			}
		}
		return runs, nil
	})
	return len(stored), full, err
}

// Adopt gives a queue job to the runs a release from before cron runs
// were queue jobs left without one, so that this release makes them:
// during a rolling upgrade from such a release, and after it. Those are
// the retries its schedulers scheduled (due at their retry time) and the
// runs they claimed and then died holding (due at once; a call that had
// started is made again with the same Idempotency-Key, counted as an
// interrupted attempt, as a run cut off by a kill always is). A run an
// older scheduler still holds is left to it (SchedulerRepos.StartRuns).
// It returns how many runs it adopted.
func (s *Enqueuer) Adopt(ctx context.Context) (int, error) {
	now := s.clock.Now()
	total := 0
	for {
		n, err := s.cfg.Store.Repos().AdoptRuns(ctx, now, s.cfg.Batch, func(e cron.Execution, next *time.Time) jobs.EnqueueParams {
			runAt := now
			if e.Status == cron.Retrying && e.RetryAt != nil {
				runAt = *e.RetryAt
			}
			return adoptedRun(e, runAt, next)
		})
		total += n
		if err != nil || n < s.cfg.Batch {
			if total > 0 {
				s.log.Info("cron: runs of an older release adopted", "runs", total)
			}
			return total, err
		}
	}
}

// adoptedRun is the queue job of an execution that an older release
// made, due at runAt; its unique key keeps two replicas from adopting it
// twice.
func adoptedRun(e cron.Execution, runAt time.Time, next *time.Time) jobs.EnqueueParams {
	job := runJob(e, runAt, next)
	job.UniqueKey = RunKind + ":" + e.ID
	return job
}

// runJob is the queue job that makes the calls of execution e, due at
// runAt, its retries bounded by the job's next slot after it (nil: none).
func runJob(e cron.Execution, runAt time.Time, next *time.Time) jobs.EnqueueParams {
	p := runPayload{Execution: e.ID, Slot: e.Slot.UnixMicro()}
	if next != nil {
		p.Next = next.UnixMicro()
	}
	payload, _ := json.Marshal(p)
	return jobs.EnqueueParams{Kind: RunKind, Payload: payload, RunAt: runAt, AccountID: e.AccountID, MaxAttempts: RunAttempts}
}

// runPayload is a run's queue job's payload: its execution, and the job's
// next slot after it, before which its call and retries must be made.
type runPayload struct {
	Execution string `json:"execution"`
	// Slot is the run's slot in unix microseconds: the call waits for it.
	Slot int64 `json:"slot"`
	// Next is the next slot in unix microseconds; 0 when there is none.
	Next int64 `json:"next,omitempty"`
}

// newRun is the execution of job j for slot, created at now, and its
// queue job, due at runAt (now when that is earlier).
func newRun(j cron.Job, slot, now, runAt time.Time, next *time.Time) Run {
	e := cron.Execution{
		ID: ident.New(ident.Execution), JobID: j.ID, AccountID: j.AccountID, Slot: slot,
		StartedAt: now, Status: cron.Running, Attempt: 1,
	}
	if runAt.Before(now) {
		runAt = now
	}
	return Run{Execution: e, Job: runJob(e, runAt, next)}
}

// plan decides what a due job does now: which slot it runs (the latest
// one not after now), whether it runs (a slot older than the grace period
// is skipped), and its next slot after that: none once the schedule ends
// (its end date, or its number of runs with this one).
func (s *Enqueuer) plan(j cron.Job, now time.Time) (slot time.Time, next *time.Time, run bool) {
	slot = j.NextRunAt.UTC()
	var p failure.Problems
	plan := cron.Compile(j.Spec, s.cfg.Parser, &p)
	if err := p.Err(); err != nil {
		s.log.Error("cron: stored job has an invalid schedule; it gets no next run", "job", j.ID, "error", err)
		return slot, nil, false
	}
	for i := 0; ; i++ {
		n, err := plan.Next(slot)
		if err != nil {
			if !errors.Is(err, cron.ErrEnded) {
				s.log.Error("cron: job has no next run", "job", j.ID, "error", err)
			}
			return slot, nil, now.Sub(slot) <= s.cfg.Grace
		}
		if n.After(now) {
			run = now.Sub(slot) <= s.cfg.Grace
			if j.MaxRuns > 0 && j.Runs+boolCount(run) >= j.MaxRuns {
				return slot, nil, run
			}
			n = n.UTC()
			return slot, &n, run
		}
		slot = n.UTC()
		if i > 1_000_000 { // a year of minutely slots is half a million
			return slot, nil, false
		}
	}
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}
