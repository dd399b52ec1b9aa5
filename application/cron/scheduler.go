package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// Scheduler defaults.
const (
	DefaultGrace        = 5 * time.Minute
	DefaultBatch        = 1000
	DefaultClaimWorkers = 4
	DefaultConcurrency  = 2000
	DefaultPollInterval = time.Second
	DefaultLookahead    = 500 * time.Millisecond
	// DefaultLease is how long a claimed run stays with its scheduler
	// without a renewal: a run whose scheduler died is taken over by
	// another one within about this long.
	DefaultLease = 3 * time.Second
	// contendedBackoff is how long a scheduler waits when due jobs exist
	// but another replica holds them.
	contendedBackoff = 5 * time.Millisecond
	// minBackoff and maxBackoff bound the wait between attempts while the
	// database is away.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// AbandonedError is the error of an execution whose call was cut off
// twice by a scheduler that died before recording the result.
const AbandonedError = "the scheduler stopped before the call's result was recorded, on the first attempt and on its retry; the calls may or may not have reached the endpoint"

// InterruptedNote is added to the error of a failed execution that had an
// interrupted attempt.
const InterruptedNote = "an earlier attempt was cut off by a stopped scheduler and retried with the same Idempotency-Key"

// pausedError is the error of a taken-over run whose job was paused or
// deleted meanwhile.
const pausedError = "the run was cancelled: its scheduler stopped before it completed, and the job was paused before another scheduler took it over"

// SchedulerConfig tunes a Scheduler.
type SchedulerConfig struct {
	Store  Store
	Parser cron.Parser
	Caller Caller
	// Clock is SystemClock when nil.
	Clock Clock
	// Wakeups, when set, signals that jobs may have changed in another
	// process (Postgres LISTEN/NOTIFY); the scheduler also polls.
	Wakeups <-chan struct{}
	// Grace is how late a missed run may still be made after downtime;
	// DefaultGrace when 0.
	Grace time.Duration
	// Batch is how many jobs one claim takes; DefaultBatch when 0.
	Batch int
	// ClaimWorkers is how many claims run at once while a backlog lasts
	// (a claim that filled its batch); DefaultClaimWorkers when 0.
	ClaimWorkers int
	// Concurrency bounds the calls in flight; DefaultConcurrency when 0.
	Concurrency int
	// AccountShare is the fraction of Concurrency that the calls of one
	// account may hold (at least one): an account whose endpoints hang
	// holds no more, and the other accounts' calls still find places.
	// Calls beyond it wait in memory, holding no place. 0 or 1: no bound.
	AccountShare float64
	// PollInterval bounds how long the scheduler sleeps without looking
	// at the database; DefaultPollInterval when 0.
	PollInterval time.Duration
	// Lookahead is how long before its slot a run is claimed; the call
	// then waits in memory for the slot, so that the claim's round trips
	// and commit do not make it late. DefaultLookahead when 0; negative
	// for none.
	Lookahead time.Duration
	// RetryBackoff is the wait before retry n (1-based) of a failed run;
	// 10 s doubling, at most 10 minutes, when nil.
	RetryBackoff func(n int) time.Duration
	// Lease is how long a claimed run stays with this scheduler unless
	// renewed (it is renewed every third of it while this scheduler
	// holds runs); DefaultLease when 0. Replicas' clocks must agree to
	// well within it.
	Lease time.Duration
	// Owner names this scheduler in the leases it takes; a random name
	// when empty. Every scheduler needs its own.
	Owner  string
	Logger *slog.Logger
}

// Scheduler claims due jobs and calls their endpoints. Every replica runs
// one. A claim is one transaction that locks the due job rows (skipping
// rows another replica holds), stores one execution per job for its slot
// (unique per job and slot), leased to this scheduler, and moves each
// job's next run on; only after the commit is the endpoint called. So a
// slot is claimed once across replicas, and since the claim and the
// advance commit together, a slot is never lost while the database is up.
//
// Precision: a run is claimed between half a Lookahead and a whole one
// before its slot and its call waits in memory for the slot, so the
// database's latency (a slow commit included) is spent ahead of time. The
// price is that a pause, update or delete made in that last moment (half a
// second by default) before a slot does not stop that slot's call.
//
// Crashes: the scheduler renews the leases of the runs it holds every
// third of the Lease. Right before a call it commits the call's start,
// only if it still holds the run. A run whose lease expired is taken over
// by another scheduler (or this one restarted): if its call had not
// started it is made then, as its first attempt, late by at most about a
// lease; if the call had started, the endpoint may have been reached, and
// the run is retried once with the same Idempotency-Key, counted in
// InterruptedAttempts. A retry cut off in turn is recorded failed with
// AbandonedError. In the happy path each slot is called once.
//
// Downtime: missed slots are not replayed. A job found late runs once,
// for its latest missed slot, if that slot is at most Grace old, and then
// moves on to its next slot after now. A clock that jumps forward is
// downtime; one that jumps back makes the next slots wait until the clock
// reaches them again (slots already run are not run again).
//
// While the database is away the scheduler backs off (up to 2 s between
// attempts) and logs one line when the outage starts and one when it ends.
type Scheduler struct {
	cfg   SchedulerConfig
	clock Clock
	log   *slog.Logger
	owner string
	wake  chan struct{}
	sem   chan struct{}
	// accounts bounds each account's share of sem.
	accounts *accountSlots
	// pending bounds the claimed calls waiting for their slot or for a
	// free place in sem, so a large backlog is claimed in steps.
	pending  chan struct{}
	results  chan Outcome
	starts   chan startRequest
	inflight sync.WaitGroup
	// held counts the runs this scheduler holds whose result is not
	// recorded yet; their leases are renewed while it is above zero.
	held   atomic.Int64
	outage *outage.Tracker
	// lastTakeOver is when (on the scheduler's clock) expired leases were
	// last looked for, in unix nanoseconds.
	lastTakeOver atomic.Int64
}

// NewScheduler builds a scheduler; Run starts it.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
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
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Lookahead == 0 {
		cfg.Lookahead = DefaultLookahead
	}
	cfg.Lookahead = max(cfg.Lookahead, 0)
	if cfg.RetryBackoff == nil {
		cfg.RetryBackoff = func(n int) time.Duration {
			return min(10*time.Second<<max(n-1, 0), 10*time.Minute)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Owner = "sch_" + hex.EncodeToString(b[:])
	}
	return &Scheduler{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger, owner: cfg.Owner,
		wake:     make(chan struct{}, 1),
		sem:      make(chan struct{}, cfg.Concurrency),
		accounts: newAccountSlots(cfg.AccountShare, cfg.Concurrency),
		pending:  make(chan struct{}, 4*cfg.Concurrency),
		results:  make(chan Outcome, cfg.Concurrency),
		starts:   make(chan startRequest, cfg.Concurrency),
		outage:   outage.NewTracker(cfg.Logger, "cron: the scheduler", minBackoff, maxBackoff),
	}
}

// Owner is the name this scheduler leases its runs under.
func (s *Scheduler) Owner() string { return s.owner }

// lease is a hold on runs from now.
func (s *Scheduler) lease(now time.Time) Lease {
	return Lease{Owner: s.owner, Until: now.Add(s.cfg.Lease)}
}

// Wake makes the scheduler look at the database at once (a job was
// created, changed or resumed in this process).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run schedules until ctx ends, then waits for the calls in flight and
// records their results.
func (s *Scheduler) Run(ctx context.Context) {
	// Two recorders: one commits a batch while the other gathers the next.
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.record(ctx)
		}()
	}
	workers.Add(1)
	go func() {
		defer workers.Done()
		s.startCalls(ctx)
	}()
	stopRenewing := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renew(stopRenewing)
	}()
	defer func() {
		s.inflight.Wait()
		close(s.results)
		close(s.starts)
		workers.Wait()
		close(stopRenewing)
		<-renewed
	}()
	failures := 0
	for ctx.Err() == nil {
		started, err := s.Tick(ctx)
		var at time.Time
		ok := false
		if err == nil {
			at, ok, err = s.cfg.Store.Repos().NextWake(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.outage.Failed(fmt.Errorf("claim due runs: %w", err))
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
			case started > 0:
				// Claim in steps of half the lookahead: each run is
				// claimed between a half and a whole lookahead before
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

// renew extends the leases of the runs this scheduler holds every third
// of the lease, until stop is closed.
func (s *Scheduler) renew(stop <-chan struct{}) {
	for {
		c, cancel := s.clock.After(s.cfg.Lease / 3)
		select {
		case <-stop:
			cancel()
			return
		case <-c:
		}
		if s.held.Load() == 0 {
			continue
		}
		// A renewal that takes longer than the lease is too late anyway.
		ctx, done := context.WithTimeout(context.Background(), s.cfg.Lease)
		_, err := s.cfg.Store.Repos().RenewExecutionLeases(ctx, s.lease(s.clock.Now()))
		done()
		if err != nil {
			s.outage.Failed(fmt.Errorf("renew leases: %w", err))
			continue
		}
		s.outage.Succeeded()
	}
}

func (s *Scheduler) sleep(ctx context.Context, d time.Duration) {
	c, stop := s.clock.After(d)
	defer stop()
	select {
	case <-ctx.Done():
	case <-c:
	case <-s.wake:
	case <-s.cfg.Wakeups:
	}
}

// call is one execution to make.
type call struct {
	job  cron.Job
	exec cron.Execution
	// nextSlot bounds retries: none is scheduled at or after it.
	nextSlot *time.Time
}

// Tick claims everything due now, in batches, and starts the calls. It
// returns how many calls it started. Run calls it in a loop; tests call
// it directly with a controlled clock.
// A claim that fills its batch means a backlog (many jobs due at one
// minute): it is then worked off by ClaimWorkers claims at once, which
// SKIP LOCKED keeps apart.
//
// Every quarter lease at most, it also takes over the runs of schedulers
// whose leases expired.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	taken, err := s.takeOverDue(ctx)
	if err != nil {
		return 0, err
	}
	calls, full, err := s.claim(ctx)
	if err != nil {
		return taken, err
	}
	for _, c := range calls {
		s.start(ctx, c)
	}
	if !full {
		return taken + len(calls), nil
	}
	var (
		mu       sync.Mutex
		started  = taken + len(calls)
		firstErr error
		wg       sync.WaitGroup
	)
	for range s.cfg.ClaimWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				calls, full, err := s.claim(ctx)
				for _, c := range calls {
					s.start(ctx, c)
				}
				mu.Lock()
				started += len(calls)
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
	return started, firstErr
}

// claim takes one batch of due jobs and due retries.
func (s *Scheduler) claim(ctx context.Context) (calls []call, full bool, err error) {
	now := s.clock.Now()
	lease := s.lease(now)
	// planned are the calls of new executions, retried those of retries.
	var planned, retried []call
	stored, err := s.cfg.Store.Claim(ctx, s.owner, func(ctx context.Context, tx Claims) (Runs, error) {
		planned, retried, full = nil, nil, false
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
			if !run {
				continue
			}
			e := cron.Execution{
				ID: ident.New(ident.Execution), JobID: j.ID, AccountID: j.AccountID, Slot: slot,
				StartedAt: now, Status: cron.Running, Attempt: 1, LeaseOwner: lease.Owner, LeaseUntil: lease.Until,
			}
			runs.Executions = append(runs.Executions, e)
			planned = append(planned, call{job: j, exec: e, nextSlot: nextAt})
		}
		if full {
			return runs, nil
		}
		retries, err := tx.ClaimRetries(ctx, now.Add(s.cfg.Lookahead), lease, s.cfg.Batch)
		if err != nil || len(retries) == 0 {
			return runs, err
		}
		full = len(retries) == s.cfg.Batch
		retried, runs.Finished, err = s.withJobs(ctx, tx, retries, now, "retry cancelled: the job was paused")
		return runs, err
	})
	if err != nil {
		return nil, false, err
	}
	// A new execution is called only if it was stored.
	isStored := make(map[string]bool, len(stored))
	for _, id := range stored {
		isStored[id] = true
	}
	for _, c := range planned {
		if isStored[c.exec.ID] {
			calls = append(calls, c)
		}
	}
	return append(calls, retried...), full, nil
}

// withJobs pairs leased executions with their jobs, read through tx;
// those whose job is gone or paused are cancelled: their outcome is
// failed, their error followed by why.
func (s *Scheduler) withJobs(ctx context.Context, tx Claims, execs []cron.Execution, now time.Time, why string) ([]call, []Outcome, error) {
	ids := make([]string, len(execs))
	for i, e := range execs {
		ids[i] = e.JobID
	}
	jobs, err := tx.JobsByID(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]cron.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	var calls []call
	var cancelled []Outcome
	for _, e := range execs {
		j, ok := byID[e.JobID]
		if !ok || j.Status != cron.Active {
			msg := why
			if e.Error != "" {
				msg = e.Error + " (" + why + ")"
			}
			cancelled = append(cancelled, Outcome{ExecutionID: e.ID, Status: cron.Failed, ResponseCode: e.ResponseCode,
				ResponseTimeMs: e.ResponseTimeMs, ResponseBody: e.ResponseBody, Error: msg, FinishedAt: now})
			continue
		}
		calls = append(calls, call{job: j, exec: e, nextSlot: j.NextRunAt})
	}
	return calls, cancelled, nil
}

// takeOverDue takes over, in batches, the runs whose leases expired, if
// it has not looked for a quarter lease (or the clock went back), and
// starts their calls. It returns how many calls it started.
func (s *Scheduler) takeOverDue(ctx context.Context) (int, error) {
	now := s.clock.Now()
	last := time.Unix(0, s.lastTakeOver.Load())
	if now.Sub(last) < s.cfg.Lease/4 && !now.Before(last) {
		return 0, nil
	}
	started := 0
	for {
		var calls []call
		var taken, failed int
		_, err := s.cfg.Store.Claim(ctx, s.owner, func(ctx context.Context, tx Claims) (Runs, error) {
			calls, taken, failed = nil, 0, 0
			execs, n, err := tx.TakeOverExpired(ctx, now, s.lease(now), AbandonedError, s.cfg.Batch)
			if err != nil {
				return Runs{}, err
			}
			failed, taken = n, len(execs)
			if taken == 0 {
				return Runs{}, nil
			}
			var cancelled []Outcome
			calls, cancelled, err = s.withJobs(ctx, tx, execs, now, pausedError)
			return Runs{Finished: cancelled}, err
		})
		if err != nil {
			return started, err
		}
		if failed > 0 {
			s.log.Warn("cron: runs cut off twice by stopped schedulers recorded as failed", "count", failed)
		}
		if taken > 0 {
			s.log.Info("cron: runs of a stopped scheduler taken over", "count", taken)
		}
		for _, c := range calls {
			s.start(ctx, c)
		}
		started += len(calls)
		if taken < s.cfg.Batch && failed < s.cfg.Batch {
			s.lastTakeOver.Store(now.UnixNano())
			return started, nil
		}
	}
}

// plan decides what a due job does now: which slot it runs (the latest
// one not after now), whether it runs (a slot older than the grace period
// is skipped), and its next slot after that: none once the schedule ends
// (its end date, or its number of runs with this one).
func (s *Scheduler) plan(j cron.Job, now time.Time) (slot time.Time, next *time.Time, run bool) {
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

// start makes one call in its own goroutine: it waits for the slot, then
// for a place within its account's share and the concurrency bound, then
// commits the call's start and calls, unless the run was taken over
// meanwhile.
func (s *Scheduler) start(ctx context.Context, c call) {
	s.pending <- struct{}{}
	s.inflight.Add(1)
	s.held.Add(1)
	go func() {
		defer func() {
			<-s.pending
			s.inflight.Done()
		}()
		at := c.exec.Slot
		if c.exec.RetryAt != nil {
			at = *c.exec.RetryAt
		}
		if wait := at.Sub(s.clock.Now()); wait > 0 {
			t, stop := s.clock.After(wait)
			<-t
			stop()
		}
		release, ok := s.accounts.acquire(c.job.AccountID)
		if !ok {
			// The account's calls fill its share and as many wait: its
			// endpoints do not answer. Waiting too, this call would hold
			// a place of the claimed calls (pending) that every account
			// shares; it is recorded as not made instead.
			if !s.startCall(ctx, c.exec.ID) {
				s.held.Add(-1)
				return
			}
			s.results <- Outcome{ExecutionID: c.exec.ID, Status: cron.Failed, Error: AccountBusyNote, FinishedAt: s.clock.Now()}
			return
		}
		defer release()
		s.sem <- struct{}{}
		defer func() { <-s.sem }()
		if !s.startCall(ctx, c.exec.ID) {
			s.held.Add(-1)
			return
		}
		s.results <- s.do(c)
	}()
}

// startRequest asks the starter to commit the start of one call; reply
// says whether the call may be made.
type startRequest struct {
	id    string
	reply chan bool
}

func (s *Scheduler) startCall(ctx context.Context, id string) bool {
	req := startRequest{id: id, reply: make(chan bool, 1)}
	s.starts <- req
	return <-req.reply
}

// startCalls commits call starts in batches (one statement for the calls
// of one moment): a call is made only once its start is committed and
// only while this scheduler holds its run. While the database is away it
// retries; once ctx has ended it gives up after a few attempts and leaves
// the runs to expire and be taken over.
func (s *Scheduler) startCalls(ctx context.Context) {
	const maxBatch = 500
	for req := range s.starts {
		batch := []startRequest{req}
	drain:
		for len(batch) < maxBatch {
			select {
			case more, ok := <-s.starts:
				if !ok {
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		ids := make([]string, len(batch))
		for i, r := range batch {
			ids[i] = r.id
		}
		var started map[string]bool
		for attempt := 0; ; attempt++ {
			sctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.Lease, 5*time.Second))
			got, err := s.cfg.Store.Repos().StartCalls(sctx, s.owner, s.clock.Now(), ids)
			cancel()
			if err == nil {
				s.outage.Succeeded()
				started = make(map[string]bool, len(got))
				for _, id := range got {
					started[id] = true
				}
				break
			}
			s.outage.Failed(fmt.Errorf("start calls: %w", err))
			if ctx.Err() != nil && attempt >= 2 {
				break
			}
			time.Sleep(backoff(attempt))
		}
		for _, r := range batch {
			r.reply <- started[r.id]
		}
	}
}

func (s *Scheduler) do(c call) Outcome {
	j := c.job
	req := Request{
		URL: j.EndpointURL, Method: j.Method, Headers: j.Headers, Timeout: j.CallTimeout(),
		IdempotencyKey: cron.IdempotencyKey(j.ID, c.exec.Slot), Body: j.CallBody(),
	}
	// The call outlives the scheduler's context: stopping waits for it
	// (bounded by its timeout) rather than recording a false failure.
	resp := s.cfg.Caller.Call(context.Background(), req)
	out := Outcome{
		ExecutionID: c.exec.ID, ResponseCode: resp.StatusCode, ResponseTimeMs: resp.Elapsed.Milliseconds(),
		ResponseBody: responseJSON(resp.Body), FinishedAt: s.clock.Now(),
	}
	switch {
	case resp.Err != nil:
		out.Status, out.Error = cron.Failed, describe(resp.Err, req.Timeout)
		out.TimedOut = errors.Is(resp.Err, context.DeadlineExceeded)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Status = cron.Success
	default:
		out.Status, out.Error = cron.Failed, fmt.Sprintf("the endpoint answered %d", resp.StatusCode)
	}
	// An interrupted attempt does not use up the job's retries.
	if out.Status == cron.Failed && c.exec.Attempt-c.exec.InterruptedAttempts <= j.Retries {
		delay := j.RetryDelay
		if delay <= 0 {
			delay = s.cfg.RetryBackoff(c.exec.Attempt - c.exec.InterruptedAttempts)
		}
		at := out.FinishedAt.Add(delay)
		if c.nextSlot == nil || at.Before(*c.nextSlot) {
			out.Status, out.RetryAt = cron.Retrying, &at
		}
	}
	if out.Status != cron.Success && c.exec.InterruptedAttempts > 0 {
		out.Error += " (" + InterruptedNote + ")"
	}
	out.Callback = callbackJob(j, c.exec, out)
	return out
}

func describe(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timeout: no complete answer within %s", timeout)
	}
	return err.Error()
}

// responseJSON keeps a response body as JSON: the body itself when it is
// valid JSON, else the text as a JSON string; nil for an empty body.
func responseJSON(body []byte) []byte {
	if len(body) == 0 {
		return nil
	}
	if json.Valid(body) {
		return body
	}
	text := string(body)
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	b, _ := json.Marshal(text)
	return b
}

// record stores call results in batches: a transaction per batch keeps
// thousands of results per second cheap on both databases. While the
// database is away it retries; once ctx has ended it gives up after about
// 30 s, and the runs, whose calls were made, are retried once by the
// scheduler that takes them over.
func (s *Scheduler) record(ctx context.Context) {
	const maxBatch = 500
	batch := make([]Outcome, 0, maxBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		var gaveUpAt time.Time
		for attempt := 0; ; attempt++ {
			tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := s.cfg.Store.Claim(tctx, s.owner, func(context.Context, Claims) (Runs, error) {
				return Runs{Finished: batch}, nil
			})
			cancel()
			if err == nil {
				s.outage.Succeeded()
				break
			}
			s.outage.Failed(fmt.Errorf("record results: %w", err))
			if ctx.Err() != nil {
				if gaveUpAt.IsZero() {
					gaveUpAt = time.Now().Add(30 * time.Second)
				} else if time.Now().After(gaveUpAt) {
					s.log.Error("cron: results not recorded before stopping; their runs will be retried once", "count", len(batch), "error", err)
					break
				}
			}
			time.Sleep(backoff(attempt))
		}
		s.held.Add(-int64(len(batch)))
		for _, o := range batch {
			if o.Status == cron.Retrying {
				s.Wake()
				break
			}
		}
		batch = batch[:0]
	}
	for o := range s.results {
		batch = append(batch, o)
	drain:
		for len(batch) < maxBatch {
			select {
			case more, ok := <-s.results:
				if !ok {
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		flush()
	}
	flush()
}

// accountSlots bounds the calls of one account in flight.
type accountSlots struct {
	share int // 0: no bound
	mu    sync.Mutex
	slots map[string]*accountSlot
}

type accountSlot struct {
	places chan struct{}
	users  int // calls holding or waiting for a place
}

func newAccountSlots(share float64, concurrency int) *accountSlots {
	a := &accountSlots{slots: map[string]*accountSlot{}}
	if share > 0 && share < 1 {
		a.share = max(1, int(math.Ceil(share*float64(concurrency))))
	}
	return a
}

// AccountBusyNote is the error of a cron run not made because its
// account's earlier calls filled its share of the scheduler, with as many
// more waiting.
const AccountBusyNote = "not called: this account's earlier cron calls fill its share of the scheduler and as many wait for a place (its endpoints are slow to answer)"

// acquire waits for a place of the account's share and returns its
// release; false, at once, when the account has its share of calls
// waiting already.
func (a *accountSlots) acquire(accountID string) (func(), bool) {
	if a.share == 0 {
		return func() {}, true
	}
	a.mu.Lock()
	s := a.slots[accountID]
	if s == nil {
		s = &accountSlot{places: make(chan struct{}, a.share)}
		a.slots[accountID] = s
	}
	if s.users >= 2*a.share {
		a.mu.Unlock()
		return nil, false
	}
	s.users++
	a.mu.Unlock()
	s.places <- struct{}{}
	return func() {
		<-s.places
		a.mu.Lock()
		if s.users--; s.users == 0 {
			delete(a.slots, accountID)
		}
		a.mu.Unlock()
	}, true
}
