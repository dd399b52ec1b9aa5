package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

var (
	_ appcron.Store                = (*Cron)(nil)
	_ appcron.Repos                = (*cronRepos)(nil)
	_ appcron.LastExecutionsReader = (*cronRepos)(nil)
)

// Cron is the cron store in memory: jobs, their executions and the answers
// recorded under Idempotency-Keys, behind one lock. It keeps the contract
// of the database store (adapters/store) that storetest.Cron checks, so
// that the cron use cases and the scheduler can be tested without a
// database.
//
// A transaction holds the lock from its first to its last call, so every
// claim is exclusive, as SQLite's single writer makes it; it records how
// to undo each change, and undoes them all when its function fails. Calls
// outside a transaction take the lock each for itself. Jobs need no
// account row here: the database refuses a job of an unknown account, this
// store does not.
//
// The zero Cron is not usable; NewCron makes one.
type Cron struct {
	// lock is a one-place semaphore rather than a mutex so that a caller
	// whose context ends stops waiting for it, as a database call would.
	lock    chan struct{}
	jobs    map[string]cron.Job
	execs   map[string]cron.Execution
	slots   map[cronSlot]string // (job, slot) → execution id
	answers map[cronAnswerKey]idempotency.Response
}

// cronSlot is the (job, slot) pair that has one execution at most.
type cronSlot struct {
	jobID string
	slot  int64 // unix microseconds
}

type cronAnswerKey struct{ accountID, key string }

// NewCron returns an empty cron store.
func NewCron() *Cron {
	return &Cron{
		lock:    make(chan struct{}, 1),
		jobs:    map[string]cron.Job{},
		execs:   map[string]cron.Execution{},
		slots:   map[cronSlot]string{},
		answers: map[cronAnswerKey]idempotency.Response{},
	}
}

// Repos returns repositories whose every call is its own transaction.
func (c *Cron) Repos() appcron.Repos { return &cronRepos{c: c} }

// Transact runs fn with repositories of one transaction: it holds the
// store until fn returns, and undoes fn's changes when fn fails (or
// panics). fn must make its calls through r: a call through Repos() in
// the meantime would wait for the transaction's end forever, so it fails
// instead when its context is fn's.
func (c *Cron) Transact(ctx context.Context, fn func(ctx context.Context, r appcron.Repos) error) (err error) {
	if active, ok := ctx.Value(cronTxKey{}).(*cronTx); ok && active.c == c && !active.done.Load() {
		return errCronNested
	}
	if err := c.acquire(ctx); err != nil {
		return err
	}
	tx := &cronTx{c: c}
	defer func() {
		if p := recover(); p != nil {
			tx.rollback()
			tx.done.Store(true)
			<-c.lock
			panic(p)
		}
		if err != nil {
			tx.rollback()
		}
		tx.done.Store(true)
		<-c.lock
	}()
	return fn(context.WithValue(ctx, cronTxKey{}, tx), &cronRepos{c: c, tx: tx})
}

// AllExecutions returns every execution of every job, in any state (the
// ports show finished ones only), ordered by job and slot: for tests that
// check what the scheduler left behind. It waits for a transaction that
// holds the store, so a transaction's function must not call it.
func (c *Cron) AllExecutions() []cron.Execution {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	out := make([]cron.Execution, 0, len(c.execs))
	for _, e := range c.execs {
		out = append(out, cronCloneExec(e))
	}
	slices.SortFunc(out, func(a, b cron.Execution) int {
		return cronCompare(strings.Compare(a.JobID, b.JobID), a.Slot.Compare(b.Slot), strings.Compare(a.ID, b.ID))
	})
	return out
}

func (c *Cron) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errCronNested is the error of a call made outside a transaction, on the
// transaction's context, while that transaction holds the store: it would
// wait for itself.
var errCronNested = errors.New("memory cron store: a call outside the transaction, made while it holds the store, would wait for it forever")

// cronTxKey marks the context of a transaction's function.
type cronTxKey struct{}

// cronTx is one transaction: its undo log, newest last.
type cronTx struct {
	c    *Cron
	undo []func()
	// done is set when the transaction has ended; its repositories then
	// refuse every call, as a finished database transaction does. It is
	// read without the store's lock, by calls that must not wait for it.
	done atomic.Bool
}

func (tx *cronTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		tx.undo[i]()
	}
	tx.undo = nil
}

// errCronTxDone is the error of a call on the repositories of a
// transaction that has ended.
var errCronTxDone = errors.New("memory cron store: the transaction has already ended")

// cronRepos are the repositories of a Cron, of one transaction when tx is
// set.
type cronRepos struct {
	c  *Cron
	tx *cronTx
}

// do runs fn holding the store: the transaction's hold, or its own.
func (r *cronRepos) do(ctx context.Context, fn func() error) error {
	if r.tx != nil {
		if r.tx.done.Load() {
			return errCronTxDone
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn()
	}
	if active, ok := ctx.Value(cronTxKey{}).(*cronTx); ok && active.c == r.c && !active.done.Load() {
		return errCronNested
	}
	if err := r.c.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-r.c.lock }()
	return fn()
}

// The changes, each logged for undoing in a transaction.

func (r *cronRepos) putJob(j cron.Job) {
	if r.tx != nil {
		old, had := r.c.jobs[j.ID]
		r.tx.undo = append(r.tx.undo, func() {
			if had {
				r.c.jobs[j.ID] = old
			} else {
				delete(r.c.jobs, j.ID)
			}
		})
	}
	r.c.jobs[j.ID] = j
}

func (r *cronRepos) deleteJob(id string) {
	old, had := r.c.jobs[id]
	if !had {
		return
	}
	if r.tx != nil {
		r.tx.undo = append(r.tx.undo, func() { r.c.jobs[id] = old })
	}
	delete(r.c.jobs, id)
}

func (r *cronRepos) putExec(e cron.Execution) {
	if r.tx != nil {
		old, had := r.c.execs[e.ID]
		r.tx.undo = append(r.tx.undo, func() {
			if had {
				r.c.storeExec(old)
			} else {
				r.c.dropExec(e.ID)
			}
		})
	}
	r.c.storeExec(e)
}

func (r *cronRepos) deleteExec(id string) {
	old, had := r.c.execs[id]
	if !had {
		return
	}
	if r.tx != nil {
		r.tx.undo = append(r.tx.undo, func() { r.c.storeExec(old) })
	}
	r.c.dropExec(id)
}

func (r *cronRepos) putAnswer(k cronAnswerKey, res idempotency.Response) {
	if r.tx != nil {
		r.tx.undo = append(r.tx.undo, func() { delete(r.c.answers, k) })
	}
	r.c.answers[k] = res
}

// storeExec and dropExec keep the (job, slot) index with the executions.
func (c *Cron) storeExec(e cron.Execution) {
	if old, ok := c.execs[e.ID]; ok {
		delete(c.slots, cronSlot{old.JobID, old.Slot.UnixMicro()})
	}
	c.execs[e.ID] = e
	c.slots[cronSlot{e.JobID, e.Slot.UnixMicro()}] = e.ID
}

func (c *Cron) dropExec(id string) {
	if old, ok := c.execs[id]; ok {
		delete(c.slots, cronSlot{old.JobID, old.Slot.UnixMicro()})
		delete(c.execs, id)
	}
}

// LockAccountJobs needs no lock of its own: a transaction holds the whole
// store.
func (r *cronRepos) LockAccountJobs(ctx context.Context, _ string) error {
	return r.do(ctx, func() error { return nil })
}

// CountJobs counts an account's jobs.
func (r *cronRepos) CountJobs(ctx context.Context, accountID string) (int, error) {
	n := 0
	err := r.do(ctx, func() error {
		for _, j := range r.c.jobs {
			if j.AccountID == accountID {
				n++
			}
		}
		return nil
	})
	return n, err
}

// InsertJob stores a new job; Conflict when its id is taken.
func (r *cronRepos) InsertJob(ctx context.Context, j cron.Job) error {
	return r.do(ctx, func() error {
		if _, taken := r.c.jobs[j.ID]; taken {
			return &failure.Error{Kind: failure.KindConflict, Code: "already_exists", Message: "cron job already exists"}
		}
		r.putJob(cronStoredJob(j))
		return nil
	})
}

// Job reads one of an account's jobs; NotFound for another account's.
func (r *cronRepos) Job(ctx context.Context, accountID, id string) (cron.Job, error) {
	var out cron.Job
	err := r.do(ctx, func() error {
		j, ok := r.c.jobs[id]
		if !ok || j.AccountID != accountID {
			return failure.NotFound("cron job")
		}
		out = cronCloneJob(j)
		return nil
	})
	return out, err
}

// Jobs lists an account's jobs, oldest first, with how many match.
func (r *cronRepos) Jobs(ctx context.Context, q appcron.JobQuery) ([]cron.Job, int, error) {
	var out []cron.Job
	total := 0
	err := r.do(ctx, func() error {
		var all []cron.Job
		for _, j := range r.c.jobs {
			if j.AccountID == q.AccountID && (q.Status == "" || j.Status == q.Status) {
				all = append(all, j)
			}
		}
		slices.SortFunc(all, func(a, b cron.Job) int {
			return cronCompare(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
		})
		total = len(all)
		for _, j := range cronPage(all, q.Limit, q.Offset) {
			out = append(out, cronCloneJob(j))
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []cron.Job{}
	}
	return out, total, nil
}

// UpdateJob saves every field of a job but its id, account and creation
// time; NotFound when the account has no such job.
func (r *cronRepos) UpdateJob(ctx context.Context, j cron.Job) error {
	return r.do(ctx, func() error {
		old, ok := r.c.jobs[j.ID]
		if !ok || old.AccountID != j.AccountID {
			return failure.NotFound("cron job")
		}
		j.CreatedAt = old.CreatedAt
		r.putJob(cronStoredJob(j))
		return nil
	})
}

// DeleteJob removes a job with its executions; NotFound when the account
// has no such job.
func (r *cronRepos) DeleteJob(ctx context.Context, accountID, id string) error {
	return r.do(ctx, func() error {
		j, ok := r.c.jobs[id]
		if !ok || j.AccountID != accountID {
			return failure.NotFound("cron job")
		}
		for _, e := range r.c.execs {
			if e.JobID == id {
				r.deleteExec(e.ID)
			}
		}
		r.deleteJob(id)
		return nil
	})
}

// cronFinished reports whether an execution is shown: success or failed.
func cronFinished(s cron.ExecutionStatus) bool { return s == cron.Success || s == cron.Failed }

// cronNewestFirst orders executions by slot, then id, newest first.
func cronNewestFirst(a, b cron.Execution) int {
	return cronCompare(b.Slot.Compare(a.Slot), strings.Compare(b.ID, a.ID))
}

// LastExecution is a job's latest finished execution.
func (r *cronRepos) LastExecution(ctx context.Context, jobID string) (cron.Execution, bool, error) {
	var out cron.Execution
	found := false
	err := r.do(ctx, func() error {
		for _, e := range r.c.execs {
			if e.JobID == jobID && cronFinished(e.Status) && (!found || cronNewestFirst(e, out) < 0) {
				out, found = e, true
			}
		}
		return nil
	})
	if err != nil || !found {
		return cron.Execution{}, false, err
	}
	return cronCloneExec(out), true, nil
}

// LastExecutions is the latest finished execution of each of the
// account's jobs among jobIDs.
func (r *cronRepos) LastExecutions(ctx context.Context, accountID string, jobIDs []string) (map[string]cron.Execution, error) {
	out := map[string]cron.Execution{}
	err := r.do(ctx, func() error {
		wanted := map[string]bool{}
		for _, id := range jobIDs {
			wanted[id] = true
		}
		for _, e := range r.c.execs {
			if !wanted[e.JobID] || e.AccountID != accountID || !cronFinished(e.Status) {
				continue
			}
			if last, ok := out[e.JobID]; !ok || cronNewestFirst(e, last) < 0 {
				out[e.JobID] = e
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for id, e := range out {
		out[id] = cronCloneExec(e)
	}
	return out, nil
}

// Executions lists a job's finished executions (or those of q.Status),
// newest slot first, with how many match.
func (r *cronRepos) Executions(ctx context.Context, q appcron.ExecutionQuery) ([]cron.Execution, int, error) {
	var out []cron.Execution
	total := 0
	err := r.do(ctx, func() error {
		var all []cron.Execution
		for _, e := range r.c.execs {
			if e.JobID != q.JobID {
				continue
			}
			if q.Status == "" && cronFinished(e.Status) || q.Status != "" && e.Status == q.Status {
				all = append(all, e)
			}
		}
		slices.SortFunc(all, cronNewestFirst)
		total = len(all)
		for _, e := range cronPage(all, q.Limit, q.Offset) {
			out = append(out, cronCloneExec(e))
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []cron.Execution{}
	}
	return out, total, nil
}

// ClaimDueJobs returns up to limit due active jobs, earliest first; the
// transaction's hold on the store keeps them from every other claim.
func (r *cronRepos) ClaimDueJobs(ctx context.Context, now time.Time, limit int) ([]cron.Job, error) {
	var out []cron.Job
	err := r.do(ctx, func() error {
		now = cronTime(now)
		var due []cron.Job
		for _, j := range r.c.jobs {
			if j.Status == cron.Active && j.NextRunAt != nil && !j.NextRunAt.After(now) {
				due = append(due, j)
			}
		}
		slices.SortFunc(due, func(a, b cron.Job) int {
			return cronCompare(a.NextRunAt.Compare(*b.NextRunAt), strings.Compare(a.ID, b.ID))
		})
		for _, j := range due[:min(len(due), max(limit, 0))] {
			out = append(out, cronCloneJob(j))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []cron.Job{}
	}
	return out, nil
}

// SetNextRuns moves each job's next run; unknown jobs are left out.
func (r *cronRepos) SetNextRuns(ctx context.Context, next []appcron.NextRun) error {
	return r.do(ctx, func() error {
		for _, n := range next {
			j, ok := r.c.jobs[n.JobID]
			if !ok {
				continue
			}
			j.NextRunAt = cronTimePtr(n.At)
			r.putJob(j)
		}
		return nil
	})
}

// InsertExecutions stores new executions and returns the ids stored: an
// execution for a (job, slot) that has one already is skipped. One of a
// job that does not exist fails the call, as the database's foreign key
// does.
func (r *cronRepos) InsertExecutions(ctx context.Context, execs []cron.Execution) ([]string, error) {
	var ids []string
	err := r.do(ctx, func() error {
		// All or nothing, as one statement: the checks come first.
		batch := map[string]bool{}
		for _, e := range execs {
			if _, ok := r.c.jobs[e.JobID]; !ok {
				return fmt.Errorf("insert executions: cron job %s does not exist", e.JobID)
			}
			if _, taken := r.c.execs[e.ID]; taken || batch[e.ID] {
				return fmt.Errorf("insert executions: execution %s already exists", e.ID)
			}
			batch[e.ID] = true
		}
		for _, e := range execs {
			e = cronNewExec(e)
			if _, taken := r.c.slots[cronSlot{e.JobID, e.Slot.UnixMicro()}]; taken {
				continue
			}
			r.putExec(e)
			ids = append(ids, e.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ClaimRetries moves up to limit due retries to running, leased to lease,
// earliest retry first.
func (r *cronRepos) ClaimRetries(ctx context.Context, now time.Time, lease appcron.Lease, limit int) ([]cron.Execution, error) {
	var out []cron.Execution
	err := r.do(ctx, func() error {
		now = cronTime(now)
		var due []cron.Execution
		for _, e := range r.c.execs {
			if e.Status == cron.Retrying && e.RetryAt != nil && !e.RetryAt.After(now) {
				due = append(due, e)
			}
		}
		slices.SortFunc(due, func(a, b cron.Execution) int {
			return cronCompare(a.RetryAt.Compare(*b.RetryAt), strings.Compare(a.ID, b.ID))
		})
		for _, e := range due[:min(len(due), max(limit, 0))] {
			e.Status, e.Attempt, e.StartedAt = cron.Running, e.Attempt+1, now
			e.LeaseOwner, e.LeaseUntil, e.CallStartedAt = lease.Owner, cronTime(lease.Until), nil
			r.putExec(e)
			out = append(out, cronCloneExec(e))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []cron.Execution{}
	}
	return out, nil
}

// cronExpired reports whether a running execution's lease, held by
// another owner than owner, ended before now.
func cronExpired(e cron.Execution, now time.Time, owner string) bool {
	return e.Status == cron.Running && !e.LeaseUntil.IsZero() && e.LeaseUntil.Before(now) &&
		e.LeaseOwner != "" && e.LeaseOwner != owner
}

// TakeOverExpired fails up to limit expired runs cut off a second time,
// then leases up to limit other expired runs to lease, the longest
// expired first; a run whose call had started counts an attempt and an
// interruption, and starts again at now.
func (r *cronRepos) TakeOverExpired(ctx context.Context, now time.Time, lease appcron.Lease, abandoned string, limit int) ([]cron.Execution, int, error) {
	var taken []cron.Execution
	failed := 0
	err := r.do(ctx, func() error {
		now = cronTime(now)
		limit = max(limit, 0)
		// The database picks the runs to fail in no particular order;
		// the id order is as good.
		var dead []cron.Execution
		for _, e := range r.c.execs {
			if cronExpired(e, now, lease.Owner) && e.CallStartedAt != nil && e.InterruptedAttempts > 0 {
				dead = append(dead, e)
			}
		}
		slices.SortFunc(dead, func(a, b cron.Execution) int { return strings.Compare(a.ID, b.ID) })
		for _, e := range dead[:min(len(dead), limit)] {
			e.Status, e.Error, e.LeaseOwner, e.LeaseUntil = cron.Failed, abandoned, "", time.Time{}
			r.putExec(e)
			failed++
		}
		var expired []cron.Execution
		for _, e := range r.c.execs {
			// A run cut off twice left over by the limit waits for the
			// next take-over to fail it: it is never called again.
			if cronExpired(e, now, lease.Owner) && (e.CallStartedAt == nil || e.InterruptedAttempts == 0) {
				expired = append(expired, e)
			}
		}
		slices.SortFunc(expired, func(a, b cron.Execution) int {
			return cronCompare(a.LeaseUntil.Compare(b.LeaseUntil), strings.Compare(a.ID, b.ID))
		})
		for _, e := range expired[:min(len(expired), limit)] {
			if e.CallStartedAt != nil {
				e.Attempt++
				e.InterruptedAttempts++
				e.StartedAt = now
			}
			e.LeaseOwner, e.LeaseUntil, e.CallStartedAt = lease.Owner, cronTime(lease.Until), nil
			r.putExec(e)
			taken = append(taken, cronCloneExec(e))
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if taken == nil {
		taken = []cron.Execution{}
	}
	return taken, failed, nil
}

// RenewExecutionLeases extends every running execution of lease.Owner to
// lease.Until.
func (r *cronRepos) RenewExecutionLeases(ctx context.Context, lease appcron.Lease) (int, error) {
	n := 0
	err := r.do(ctx, func() error {
		for _, e := range r.c.execs {
			if e.Status == cron.Running && e.LeaseOwner == lease.Owner {
				e.LeaseUntil = cronTime(lease.Until)
				r.putExec(e)
				n++
			}
		}
		return nil
	})
	return n, err
}

// StartCalls records the start of the calls owner still holds and has
// not started, and returns their ids.
func (r *cronRepos) StartCalls(ctx context.Context, owner string, at time.Time, ids []string) ([]string, error) {
	var started []string
	err := r.do(ctx, func() error {
		at := cronTime(at)
		for _, id := range ids {
			e, ok := r.c.execs[id]
			if !ok || e.Status != cron.Running || e.LeaseOwner != owner || e.CallStartedAt != nil {
				continue
			}
			e.CallStartedAt = &at
			r.putExec(e)
			started = append(started, id)
		}
		return nil
	})
	return started, err
}

// JobsByID reads jobs of any account; missing ids are left out.
func (r *cronRepos) JobsByID(ctx context.Context, ids []string) ([]cron.Job, error) {
	var out []cron.Job
	err := r.do(ctx, func() error {
		seen := map[string]bool{}
		for _, id := range ids {
			if j, ok := r.c.jobs[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, cronCloneJob(j))
			}
		}
		return nil
	})
	return out, err
}

// FinishExecutions records the outcomes of running executions owner
// holds; the others are left alone.
func (r *cronRepos) FinishExecutions(ctx context.Context, owner string, results []appcron.Outcome) error {
	return r.do(ctx, func() error {
		for _, o := range results {
			e, ok := r.c.execs[o.ExecutionID]
			if !ok || e.Status != cron.Running || e.LeaseOwner != owner {
				continue
			}
			e.Status, e.ResponseCode, e.ResponseTimeMs, e.Error = o.Status, o.ResponseCode, o.ResponseTimeMs, o.Error
			e.ResponseBody = nil
			if o.ResponseBody != nil {
				e.ResponseBody = slices.Clone(o.ResponseBody)
			}
			e.RetryAt = cronTimePtr(o.RetryAt)
			e.LeaseOwner, e.LeaseUntil = "", time.Time{}
			r.putExec(e)
		}
		return nil
	})
}

// NextWake is the earliest next run of an active job or retry of an
// execution.
func (r *cronRepos) NextWake(ctx context.Context) (time.Time, bool, error) {
	var at time.Time
	found := false
	consider := func(t *time.Time) {
		if t != nil && (!found || t.Before(at)) {
			at, found = *t, true
		}
	}
	err := r.do(ctx, func() error {
		for _, j := range r.c.jobs {
			if j.Status == cron.Active {
				consider(j.NextRunAt)
			}
		}
		for _, e := range r.c.execs {
			if e.Status == cron.Retrying {
				consider(e.RetryAt)
			}
		}
		return nil
	})
	if err != nil || !found {
		return time.Time{}, false, err
	}
	return at, true, nil
}

// RecordResponse keeps a creation's answer under its key, with the
// transaction; idempotency.ErrAnsweredElsewhere when the key has one.
func (r *cronRepos) RecordResponse(ctx context.Context, accountID, key string, res idempotency.Response) error {
	return r.do(ctx, func() error {
		k := cronAnswerKey{accountID, key}
		if _, answered := r.c.answers[k]; answered {
			return idempotency.ErrAnsweredElsewhere
		}
		body := slices.Clone(res.Body)
		if body == nil {
			body = []byte{}
		}
		r.putAnswer(k, idempotency.Response{Status: res.Status, Body: body})
		return nil
	})
}

// cronPage is the page of a listing: all of it when limit is 0, as bun
// leaves a zero limit out.
func cronPage[T any](all []T, limit, offset int) []T {
	offset = min(max(offset, 0), len(all))
	all = all[offset:]
	if limit > 0 {
		all = all[:min(limit, len(all))]
	}
	return all
}

// cronCompare is the first of the comparisons that is not a tie.
func cronCompare(cmps ...int) int {
	for _, c := range cmps {
		if c != 0 {
			return c
		}
	}
	return 0
}

// cronTime is t as the database gives it back: in UTC, to the
// microsecond. The zero time stays zero (a column left NULL).
func cronTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

func cronTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := cronTime(*t)
	return &v
}

func cronIntPtr(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cronStoredJob is j as the database stores it: its own copies of what
// it refers to, times to the microsecond, the timeout to the millisecond,
// and no headers as nil.
func cronStoredJob(j cron.Job) cron.Job {
	j = cronCloneJob(j)
	j.Timeout = time.Duration(j.Timeout.Milliseconds()) * time.Millisecond
	j.CreatedAt = cronTime(j.CreatedAt)
	if len(j.Headers) == 0 {
		j.Headers = nil
	}
	j.NextRunAt, j.UpdatedAt = cronTimePtr(j.NextRunAt), cronTimePtr(j.UpdatedAt)
	return j
}

// cronCloneJob copies what a job refers to, so that neither the store
// nor its callers see the other's later changes.
func cronCloneJob(j cron.Job) cron.Job {
	j.Headers = maps.Clone(j.Headers)
	if j.Body != nil {
		j.Body = slices.Clone(j.Body)
	}
	j.DayOfWeek, j.DayOfMonth = cronIntPtr(j.DayOfWeek), cronIntPtr(j.DayOfMonth)
	if j.NextRunAt != nil {
		v := *j.NextRunAt
		j.NextRunAt = &v
	}
	if j.UpdatedAt != nil {
		v := *j.UpdatedAt
		j.UpdatedAt = &v
	}
	return j
}

// cronNewExec is e as the database stores a new execution: the fields
// of a run starting, the outcome's left at their defaults.
func cronNewExec(e cron.Execution) cron.Execution {
	return cron.Execution{
		ID: e.ID, JobID: e.JobID, AccountID: e.AccountID, Slot: cronTime(e.Slot), StartedAt: cronTime(e.StartedAt),
		Status: e.Status, Attempt: e.Attempt, InterruptedAttempts: e.InterruptedAttempts,
		LeaseOwner: e.LeaseOwner, LeaseUntil: cronTime(e.LeaseUntil), CallStartedAt: cronTimePtr(e.CallStartedAt),
	}
}

func cronCloneExec(e cron.Execution) cron.Execution {
	if e.ResponseBody != nil {
		e.ResponseBody = slices.Clone(e.ResponseBody)
	}
	if e.RetryAt != nil {
		v := *e.RetryAt
		e.RetryAt = &v
	}
	if e.CallStartedAt != nil {
		v := *e.CallStartedAt
		e.CallStartedAt = &v
	}
	return e
}
