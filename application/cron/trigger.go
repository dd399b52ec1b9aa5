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
// retrying when the job has retries left (the scheduler makes them, as
// for a scheduled run). The run is an execution of its own, for the slot
// now; it does not count towards the schedule's end, and a paused job
// runs too. NotFound for another account's job.
//
// The run is leased to this scheduler for the call's timeout and a lease
// more (renewed while this scheduler runs): if the process dies during
// the call, another scheduler takes the run over as it does a scheduled
// one.
func (s *Scheduler) Trigger(ctx context.Context, accountID, id string) (cron.Execution, error) {
	if !ident.Valid(ident.CronJob, id) {
		return cron.Execution{}, failure.NotFound("cron job")
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	// Scheduled slots are whole minutes; a manual one is never on a
	// whole second, so it never takes a scheduled slot's place.
	if now.Equal(now.Truncate(time.Second)) {
		now = now.Add(time.Microsecond)
	}
	var c call
	stored, err := s.cfg.Store.Claim(ctx, s.owner, func(ctx context.Context, tx Claims) (Runs, error) {
		j, err := tx.Job(ctx, accountID, id)
		if err != nil {
			return Runs{}, err
		}
		e := cron.Execution{
			ID: ident.New(ident.Execution), JobID: j.ID, AccountID: j.AccountID, Slot: now, StartedAt: now,
			Status: cron.Running, Attempt: 1, LeaseOwner: s.owner, LeaseUntil: now.Add(j.CallTimeout() + s.cfg.Lease),
		}
		c = call{job: j, exec: e, nextSlot: j.NextRunAt}
		return Runs{Executions: []cron.Execution{e}}, nil
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
	started, err := s.cfg.Store.Repos().StartCalls(rctx, s.owner, s.clock.Now(), []string{c.exec.ID})
	if err != nil {
		return cron.Execution{}, err
	}
	if len(started) != 1 {
		return cron.Execution{}, fmt.Errorf("trigger %s: the run was taken over before its call", c.exec.ID)
	}
	out := s.do(c)
	if _, err := s.cfg.Store.Claim(rctx, s.owner, func(context.Context, Claims) (Runs, error) {
		return Runs{Finished: []Outcome{out}}, nil
	}); err != nil {
		return cron.Execution{}, err
	}
	if out.Status == cron.Retrying {
		s.Wake()
	}
	e := c.exec
	e.Status, e.ResponseCode, e.ResponseTimeMs, e.ResponseBody = out.Status, out.ResponseCode, out.ResponseTimeMs, out.ResponseBody
	e.Error, e.RetryAt, e.TimedOut, e.LeaseOwner, e.LeaseUntil = out.Error, out.RetryAt, out.TimedOut, "", time.Time{}
	return e, nil
}
