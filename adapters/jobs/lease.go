package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// heldJob is a claimed job whose lease this runner renews until the job's
// handler returns.
type heldJob struct {
	id   int64
	kind string
	// ctx is the job's context, cancelled with ErrLeaseLost when the lease
	// is lost.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// until is when the lease ends as far as this runner knows for sure:
	// the end it last claimed or renewed. A renewal whose answer was lost
	// may have extended it; never the other way.
	until time.Time
}

// heldJobs are the jobs this runner holds leases on.
type heldJobs struct {
	mu   sync.Mutex
	jobs map[int64]*heldJob
}

func (h *heldJobs) add(parent context.Context, job jobs.Job, until time.Time) *heldJob {
	ctx, cancel := context.WithCancelCause(parent)
	j := &heldJob{id: job.ID, kind: job.Kind, ctx: ctx, cancel: cancel, until: until}
	h.mu.Lock()
	h.jobs[job.ID] = j
	h.mu.Unlock()
	return j
}

// remove stops renewing j's lease and releases its context.
func (h *heldJobs) remove(j *heldJob) {
	h.mu.Lock()
	if h.jobs[j.id] == j {
		delete(h.jobs, j.id)
	}
	h.mu.Unlock()
	j.cancel(nil)
}

func (h *heldJobs) snapshot() []*heldJob {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*heldJob, 0, len(h.jobs))
	for _, j := range h.jobs {
		out = append(out, j)
	}
	return out
}

// renewed records a heartbeat's answer for the jobs it was sent for: the
// renewed ones hold their lease until the kind's lease from now; the others
// lost theirs and are cancelled. It returns how many were lost. Jobs that
// ended meanwhile are left alone (their ids may even be held again, by a
// new claim, which the heartbeat was not about).
func (h *heldJobs) renewed(sent []*heldJob, renewed []int64, until map[string]time.Time) (lost int) {
	ok := make(map[int64]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, j := range sent {
		if h.jobs[j.id] != j {
			continue
		}
		if ok[j.id] {
			j.until = until[j.kind]
			continue
		}
		lost++
		delete(h.jobs, j.id)
		j.cancel(ErrLeaseLost)
	}
	return lost
}

// expire cancels the jobs whose lease has ended by now without a renewal
// (the database could not be reached): another worker may rescue them from
// now on. It returns how many.
func (h *heldJobs) expire(now time.Time) (expired int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, j := range h.jobs {
		if now.Before(j.until) {
			continue
		}
		expired++
		delete(h.jobs, id)
		j.cancel(ErrLeaseLost)
	}
	return expired
}

// heartbeat renews the leases of the running jobs every HeartbeatInterval
// until the runner has stopped its jobs.
func (r *Runner) heartbeat() {
	defer r.beatWG.Done()
	t := time.NewTicker(r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-r.beatCtx.Done():
			return
		case <-t.C:
			r.renew(r.beatCtx)
		}
	}
}

// renew is one heartbeat: one statement for every job this runner holds.
func (r *Runner) renew(ctx context.Context) {
	held := r.held.snapshot()
	if len(held) == 0 {
		return
	}
	now := r.cfg.Now()
	leases := r.leases(now)
	until := make(map[string]time.Time, len(leases))
	for _, l := range leases {
		until[l.Kind] = l.Until
	}
	ids := make([]int64, len(held))
	for i, j := range held {
		ids[i] = j.id
	}
	// A renewal slower than a heartbeat is as good as failed: the next one
	// tries again.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.HeartbeatInterval)
	renewed, err := r.queue.RenewLeases(ctx, r.cfg.WorkerID, ids, leases)
	cancel()
	if err != nil {
		if r.beatCtx.Err() != nil {
			return
		}
		r.renewOutage.Failed(err)
		if n := r.held.expire(r.cfg.Now()); n > 0 {
			r.cfg.Logger.Warn("cancelled jobs whose leases ended while their renewal failed", "count", n)
		}
		return
	}
	r.renewOutage.Succeeded()
	if lost := r.held.renewed(held, renewed, until); lost > 0 {
		r.cfg.Logger.Warn("cancelled jobs whose leases were lost", "count", lost)
	}
}
