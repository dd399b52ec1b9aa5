package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// AbandonedError is the error of an execution whose call was cut off
// twice by a process that died before recording the result.
const AbandonedError = "the scheduler stopped before the call's result was recorded, on the first attempt and on its retry; the calls may or may not have reached the endpoint"

// InterruptedNote is added to the error of a failed execution that had an
// interrupted attempt.
const InterruptedNote = "an earlier attempt was cut off by a stopped scheduler and retried with the same Idempotency-Key"

// pausedError is the error of a taken-over run whose job was paused or
// deleted meanwhile.
const pausedError = "the run was cancelled: its scheduler stopped before it completed, and the job was paused before another scheduler took it over"

// retryPausedError is the error added to a retry not made because its
// job was paused.
const retryPausedError = "retry cancelled: the job was paused"

// AccountBusyNote is the error of a cron run not called because no worker
// took it before its job's next run and the grace period: the account's
// earlier calls fill its share of the workers (its endpoints are slow to
// answer), or every worker is busy.
const AccountBusyNote = "not called: no worker was free for it before the job's next run and the grace period (this account's earlier cron calls fill its share of the scheduler: its endpoints are slow to answer)"

// WorkerConfig tunes a Worker.
type WorkerConfig struct {
	Store  Store
	Caller Caller
	// Clock is SystemClock when nil.
	Clock Clock
	// Owner names this process in the calls it starts: the runner's
	// worker id. A random name when empty.
	Owner string
	// RetryBackoff is the wait before retry n (1-based) of a failed run;
	// 10 s doubling, at most 10 minutes, when nil.
	RetryBackoff func(n int) time.Duration
	// Grace is how late a run never taken from the queue may still be
	// called once its job's next run has come; DefaultGrace when 0.
	Grace time.Duration
	// Backstop is how long after a triggered run's call timeout its queue
	// job takes the run over, should this process die during the call;
	// 3 s when 0.
	Backstop time.Duration
	Logger   *slog.Logger
}

// Worker is the handler of the runs (queue jobs of RunKind): it waits for
// the run's slot, starts its call (committed before the call, batched
// with the other starts of the moment), calls the endpoint and records
// the outcome (batched likewise), then answers the runner: done, or
// retry at the run's retry time.
//
// Crashes are the queue's to notice: a run whose worker died is rescued
// once its lease expires and claimed again. If its call had not started,
// it is made then, as its first attempt; if it had, the endpoint may have
// been reached, and the run is retried once with the same
// Idempotency-Key, counted in InterruptedAttempts. A retry cut off in
// turn is recorded failed with AbandonedError. In the happy path each
// slot is called once.
type Worker struct {
	cfg     WorkerConfig
	clock   Clock
	log     *slog.Logger
	starts  *batcher[string, []Started]
	records *batcher[Outcome, []string]
}

// NewWorker builds the runs' handler.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.RetryBackoff == nil {
		cfg.RetryBackoff = func(n int) time.Duration {
			return min(10*time.Second<<max(n-1, 0), 10*time.Minute)
		}
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Backstop <= 0 {
		cfg.Backstop = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Owner = "sch_" + hex.EncodeToString(b[:])
	}
	w := &Worker{cfg: cfg, clock: cfg.Clock, log: cfg.Logger}
	w.starts = newBatcher(func(ids []string) ([]Started, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return w.cfg.Store.Repos().StartRuns(ctx, w.cfg.Owner, w.now(), ids, true)
	})
	w.records = newBatcher(func(outs []Outcome) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return w.cfg.Store.Record(ctx, w.cfg.Owner, outs)
	})
	return w
}

// Owner is the name this worker starts calls under.
func (w *Worker) Owner() string { return w.cfg.Owner }

func (w *Worker) now() time.Time { return w.clock.Now().UTC().Truncate(time.Microsecond) }

// call is one execution to make.
type call struct {
	job  cron.Job
	exec cron.Execution
	// nextSlot bounds retries: none is scheduled at or after it.
	nextSlot *time.Time
}

// Work makes one attempt of a run: a queue job of RunKind.
func (w *Worker) Work(ctx context.Context, job jobs.Job) error {
	var p runPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil || p.Execution == "" {
		return jobs.Permanent(fmt.Errorf("cron run payload: %v", err))
	}
	slot := time.UnixMicro(p.Slot).UTC()
	var next *time.Time
	if p.Next != 0 {
		n := time.UnixMicro(p.Next).UTC()
		next = &n
	}
	if wait := slot.Sub(w.clock.Now()); wait > 0 {
		t, stop := w.clock.After(wait)
		select {
		case <-t:
			stop()
		case <-ctx.Done():
			stop()
			return context.Cause(ctx)
		}
	}
	if now := w.clock.Now(); job.Attempt == 1 && next != nil && !now.Before(*next) && now.Sub(slot) > w.cfg.Grace {
		// The run waited in the queue, never taken, past its job's next
		// run and the grace period: its account's calls held their share
		// meanwhile. Not called, as a run missed in downtime is not.
		if done, err := w.skip(ctx, p.Execution); done || err != nil {
			return err
		}
	}
	started, err := w.starts.do(p.Execution)
	if err != nil {
		return fmt.Errorf("start cron call: %w", err)
	}
	for _, s := range started {
		if s.Execution.ID == p.Execution {
			nx := next
			if nx == nil {
				nx = s.Job.NextRunAt
			}
			return w.finish(ctx, w.do(call{job: s.Job, exec: s.Execution, nextSlot: nx}))
		}
	}
	return w.unstarted(ctx, p.Execution)
}

// skip records a run never taken before, so never called, as not called.
func (w *Worker) skip(ctx context.Context, id string) (bool, error) {
	was := cron.Execution{ID: id, Status: cron.Running, Attempt: 1}
	return w.cfg.Store.Repos().SettleRun(ctx, was, Outcome{ExecutionID: id, Status: cron.Failed, Error: AccountBusyNote, FinishedAt: w.now()})
}

// finish records a call's outcome and tells the runner what is next: a
// retry at its time, or nothing.
func (w *Worker) finish(ctx context.Context, out Outcome) error {
	recorded, err := w.records.do(out)
	if err != nil {
		// The call was made and its result is lost: the next attempt
		// finds it started and retries it once with the same key.
		return fmt.Errorf("record cron outcome: %w", err)
	}
	ok := false
	for _, id := range recorded {
		ok = ok || id == out.ExecutionID
	}
	if ok && out.Status == cron.Retrying {
		return jobs.RetryAfter(max(out.RetryAt.Sub(w.clock.Now()), 0), errors.New(out.Error))
	}
	return nil
}

// unstarted settles a run that StartRuns did not start: gone or finished
// (nothing to do), a retry not due yet (the queue job was rescued early),
// a run of a paused or deleted job, or one cut off twice.
func (w *Worker) unstarted(ctx context.Context, id string) error {
	r := w.cfg.Store.Repos()
	e, jobStatus, ok, err := r.Execution(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	now := w.now()
	fail := func(msg string) error {
		if e.Error != "" && e.Status == cron.Retrying {
			msg = e.Error + " (" + msg + ")"
		}
		_, err := r.SettleRun(ctx, e, Outcome{ExecutionID: e.ID, Status: cron.Failed, ResponseCode: e.ResponseCode,
			ResponseTimeMs: e.ResponseTimeMs, ResponseBody: e.ResponseBody, Error: msg, FinishedAt: now, TimedOut: e.TimedOut})
		return err
	}
	switch {
	case e.Status == cron.Success || e.Status == cron.Failed:
		return nil
	case e.Status == cron.Retrying && jobStatus != cron.Active:
		return fail(retryPausedError)
	case e.Status == cron.Retrying:
		if e.RetryAt != nil && e.RetryAt.After(now) {
			return jobs.RetryAfter(e.RetryAt.Sub(now), errors.New("the retry is not due yet"))
		}
		return errors.New("the retry did not start; trying again")
	case e.CallStartedAt == nil && jobStatus != cron.Active:
		// Paused or deleted before the slot: no run, no trace.
		_, err := r.DropRun(ctx, e.ID)
		return err
	case e.CallStartedAt != nil && e.InterruptedAttempts > 0:
		w.log.Warn("cron: a run cut off twice by stopped schedulers recorded as failed", "execution", e.ID)
		return fail(AbandonedError)
	case e.CallStartedAt != nil && jobStatus != cron.Active:
		return fail(pausedError)
	}
	return errors.New("the call did not start; trying again")
}

func (w *Worker) do(c call) Outcome {
	j := c.job
	req := Request{
		URL: j.EndpointURL, Method: j.Method, Headers: j.Headers, Timeout: j.CallTimeout(),
		IdempotencyKey: cron.IdempotencyKey(j.ID, c.exec.Slot), Body: j.CallBody(),
	}
	// The call outlives the runner's context: stopping waits for it
	// (bounded by its timeout) rather than recording a false failure.
	resp := w.cfg.Caller.Call(context.Background(), req)
	out := Outcome{
		ExecutionID: c.exec.ID, ResponseCode: resp.StatusCode, ResponseTimeMs: resp.Elapsed.Milliseconds(),
		ResponseBody: responseJSON(resp.Body), FinishedAt: w.now(),
	}
	if c.exec.CallStartedAt != nil {
		out.CallStartedAt = *c.exec.CallStartedAt
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
			delay = w.cfg.RetryBackoff(c.exec.Attempt - c.exec.InterruptedAttempts)
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
