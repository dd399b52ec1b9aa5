package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

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
	// expiryMargin is added to a call's timeout to get the deadline after
	// which a running execution is taken to be abandoned.
	expiryMargin = 30 * time.Second
	// contendedBackoff is how long a scheduler waits when due jobs exist
	// but another replica holds them.
	contendedBackoff = 5 * time.Millisecond
)

// AbandonedError is the error of an execution whose scheduler stopped
// before recording the result.
const AbandonedError = "the scheduler stopped before the call's result was recorded; the call may or may not have reached the endpoint"

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
	Logger       *slog.Logger
}

// Scheduler claims due jobs and calls their endpoints. Every replica runs
// one. A claim is one transaction that locks the due job rows (skipping
// rows another replica holds), stores one execution per job for its slot
// (unique per job and slot) and moves each job's next run on; only after
// the commit is the endpoint called. So a slot is called at most once
// across replicas, and since the claim and the advance commit together,
// a slot is never lost while the database is up.
//
// Precision: a run is claimed between half a Lookahead and a whole one
// before its slot and its call waits in memory for the slot, so the
// database's latency (a slow commit included) is spent ahead of time. The
// price is that a pause, update or delete made in that last moment (half a
// second by default) before a slot does not stop that slot's call.
//
// Crashes: an execution whose scheduler dies after the claim stays
// running until its deadline (the call's timeout plus 30 s), when any
// replica records it failed with AbandonedError; the slot is not called
// again, because the endpoint may have been reached.
//
// Downtime: missed slots are not replayed. A job found late runs once,
// for its latest missed slot, if that slot is at most Grace old, and then
// moves on to its next slot after now.
type Scheduler struct {
	cfg   SchedulerConfig
	clock Clock
	log   *slog.Logger
	wake  chan struct{}
	sem   chan struct{}
	// pending bounds the claimed calls waiting for their slot or for a
	// free place in sem, so a large backlog is claimed in steps.
	pending  chan struct{}
	results  chan Outcome
	inflight sync.WaitGroup
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
	return &Scheduler{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger,
		wake:    make(chan struct{}, 1),
		sem:     make(chan struct{}, cfg.Concurrency),
		pending: make(chan struct{}, 4*cfg.Concurrency),
		results: make(chan Outcome, cfg.Concurrency),
	}
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
	var recorders sync.WaitGroup
	for range 2 {
		recorders.Add(1)
		go func() {
			defer recorders.Done()
			s.record()
		}()
	}
	defer func() {
		s.inflight.Wait()
		close(s.results)
		recorders.Wait()
	}()
	var lastExpiry time.Time
	for ctx.Err() == nil {
		now := s.clock.Now()
		if now.Sub(lastExpiry) >= 10*time.Second {
			lastExpiry = now
			if n, err := s.cfg.Store.Repos().ExpireRunning(ctx, now, AbandonedError); err != nil && ctx.Err() == nil {
				s.log.Warn("cron: expire abandoned executions", "error", err)
			} else if n > 0 {
				s.log.Warn("cron: executions abandoned by a stopped scheduler recorded as failed", "count", n)
			}
		}
		started, err := s.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("cron: claim due jobs", "error", err)
		}
		wait := s.cfg.PollInterval
		at, ok, err := s.cfg.Store.Repos().NextWake(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("cron: read next run", "error", err)
		} else if ok {
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
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	calls, full, err := s.claim(ctx)
	if err != nil {
		return 0, err
	}
	for _, c := range calls {
		s.start(c)
	}
	if !full {
		return len(calls), nil
	}
	var (
		mu       sync.Mutex
		started  = len(calls)
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
					s.start(c)
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
	err = s.cfg.Store.Transact(ctx, func(ctx context.Context, r Repos) error {
		calls, full = nil, false
		jobs, err := r.ClaimDueJobs(ctx, now.Add(s.cfg.Lookahead), s.cfg.Batch)
		if err != nil {
			return err
		}
		full = len(jobs) == s.cfg.Batch
		next := make([]NextRun, 0, len(jobs))
		execs := make([]cron.Execution, 0, len(jobs))
		byExec := map[string]call{}
		for _, j := range jobs {
			slot, nextAt, run := s.plan(j, now)
			next = append(next, NextRun{JobID: j.ID, At: nextAt})
			if !run {
				continue
			}
			e := cron.Execution{
				ID: ident.New(ident.Execution), JobID: j.ID, AccountID: j.AccountID, Slot: slot,
				StartedAt: now, Status: cron.Running, Attempt: 1, Deadline: now.Add(j.CallTimeout() + expiryMargin),
			}
			execs = append(execs, e)
			byExec[e.ID] = call{job: j, exec: e, nextSlot: nextAt}
		}
		if len(execs) > 0 {
			ids, err := r.InsertExecutions(ctx, execs)
			if err != nil {
				return err
			}
			for _, id := range ids {
				calls = append(calls, byExec[id])
			}
		}
		if err := r.SetNextRuns(ctx, next); err != nil {
			return err
		}
		if full {
			return nil
		}
		retries, err := r.ClaimRetries(ctx, now.Add(s.cfg.Lookahead), expiryMargin, s.cfg.Batch)
		if err != nil || len(retries) == 0 {
			return err
		}
		full = len(retries) == s.cfg.Batch
		ids := make([]string, len(retries))
		for i, e := range retries {
			ids[i] = e.JobID
		}
		rjobs, err := r.JobsByID(ctx, ids)
		if err != nil {
			return err
		}
		byID := map[string]cron.Job{}
		for _, j := range rjobs {
			byID[j.ID] = j
		}
		var cancelled []Outcome
		for _, e := range retries {
			j, ok := byID[e.JobID]
			if !ok || j.Status != cron.Active {
				cancelled = append(cancelled, Outcome{ExecutionID: e.ID, Status: cron.Failed, ResponseCode: e.ResponseCode,
					ResponseTimeMs: e.ResponseTimeMs, ResponseBody: e.ResponseBody, Error: e.Error + " (retry cancelled: the job was paused)", FinishedAt: now})
				continue
			}
			calls = append(calls, call{job: j, exec: e, nextSlot: j.NextRunAt})
		}
		if len(cancelled) > 0 {
			return r.FinishExecutions(ctx, cancelled)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return calls, full, nil
}

// plan decides what a due job does now: which slot it runs (the latest
// one not after now), whether it runs (a slot older than the grace period
// is skipped), and its next slot after that.
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
			s.log.Error("cron: job has no next run", "job", j.ID, "error", err)
			return slot, nil, now.Sub(slot) <= s.cfg.Grace
		}
		if n.After(now) {
			n = n.UTC()
			return slot, &n, now.Sub(slot) <= s.cfg.Grace
		}
		slot = n.UTC()
		if i > 1_000_000 { // a year of minutely slots is half a million
			return slot, nil, false
		}
	}
}

// start makes one call in its own goroutine: it waits for the slot, then
// for a place within the concurrency bound.
func (s *Scheduler) start(c call) {
	s.pending <- struct{}{}
	s.inflight.Add(1)
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
		s.sem <- struct{}{}
		defer func() { <-s.sem }()
		s.results <- s.do(c)
	}()
}

func (s *Scheduler) do(c call) Outcome {
	j := c.job
	req := Request{
		URL: j.EndpointURL, Method: j.Method, Headers: j.Headers, Timeout: j.CallTimeout(),
		IdempotencyKey: cron.IdempotencyKey(j.ID, c.exec.Slot),
	}
	if cron.HasBody(j.Method) && j.Body != nil {
		req.Body = j.Body
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
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Status = cron.Success
	default:
		out.Status, out.Error = cron.Failed, fmt.Sprintf("the endpoint answered %d", resp.StatusCode)
	}
	if out.Status == cron.Failed && c.exec.Attempt <= j.Retries {
		at := out.FinishedAt.Add(s.cfg.RetryBackoff(c.exec.Attempt))
		if c.nextSlot == nil || at.Before(*c.nextSlot) {
			out.Status, out.RetryAt = cron.Retrying, &at
		}
	}
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
// thousands of results per second cheap on both databases.
func (s *Scheduler) record() {
	const maxBatch = 500
	batch := make([]Outcome, 0, maxBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for attempt := 0; ; attempt++ {
			err := s.cfg.Store.Transact(ctx, func(ctx context.Context, r Repos) error {
				return r.FinishExecutions(ctx, batch)
			})
			if err == nil || attempt == 5 {
				if err != nil {
					s.log.Error("cron: record results", "count", len(batch), "error", err)
				}
				break
			}
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
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
