package cron

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// Trigger runs an account's job now, outside its schedule, and returns
// its execution once the call's outcome is recorded: success, failed, or
// retrying when the job has retries left (the queue makes them, as for a
// scheduled run). The run is an execution of its own, for the slot now;
// it does not count towards the schedule's end, and a paused job runs
// too. NotFound for another account's job.
//
// The call is made here, in the request; the run's queue job is due only
// after the call's timeout and a backstop more: if the process dies
// during the call, a runner takes the run over as it does a scheduled
// one.
func (w *Worker) Trigger(ctx context.Context, accountID, id string) (cron.Execution, error) {
	if !ident.Valid(ident.CronJob, id) {
		return cron.Execution{}, failure.NotFound("cron job")
	}
	now := w.now()
	// Scheduled slots are whole minutes; a manual one is never on a
	// whole second, so it never takes a scheduled slot's place.
	if now.Equal(now.Truncate(time.Second)) {
		now = now.Add(time.Microsecond)
	}
	var run Run
	stored, err := w.cfg.Store.Claim(ctx, func(ctx context.Context, tx Claims) (Runs, error) {
		j, err := tx.Job(ctx, accountID, id)
		if err != nil {
			return Runs{}, err
		}
		run = newRun(j, now, now, now.Add(j.CallTimeout()+w.cfg.Backstop), j.NextRunAt)
		return Runs{Runs: []Run{run}}, nil
	})
	if err != nil {
		return cron.Execution{}, err
	}
	if len(stored) != 1 {
		// Another trigger of the job took the same microsecond.
		return cron.Execution{}, failure.Conflict("cron_trigger_busy", "the job was triggered at this very moment already; trigger it again")
	}
	// The call outlives the request: its outcome is recorded (and its
	// callback enqueued) even when the client goes away.
	rctx := context.WithoutCancel(ctx)
	r := w.cfg.Store.Repos()
	started, err := r.StartRuns(rctx, w.cfg.Owner, w.now(), []string{run.Execution.ID}, false)
	if err != nil {
		return cron.Execution{}, err
	}
	if len(started) != 1 {
		return cron.Execution{}, fmt.Errorf("trigger %s: the run was taken over before its call", run.Execution.ID)
	}
	s := started[0]
	out := w.do(call{job: s.Job, exec: s.Execution, nextSlot: s.Job.NextRunAt})
	if _, err := w.cfg.Store.Record(rctx, w.cfg.Owner, []Outcome{out}); err != nil {
		return cron.Execution{}, err
	}
	// The run's queue job ends it now, or makes its retry.
	at := w.now()
	if out.RetryAt != nil {
		at = *out.RetryAt
	}
	if err := r.RescheduleRun(rctx, run.Job, at); err != nil {
		return cron.Execution{}, err
	}
	e := s.Execution
	e.Status, e.ResponseCode, e.ResponseTimeMs, e.ResponseBody = out.Status, out.ResponseCode, out.ResponseTimeMs, out.ResponseBody
	e.Error, e.RetryAt, e.TimedOut, e.LeaseOwner = out.Error, out.RetryAt, out.TimedOut, ""
	return e, nil
}
