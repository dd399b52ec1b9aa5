package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/queue"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Queue is the durable job queue in memory: what a runner (adapters/jobs)
// claims, renews, completes, retries and rescues, with the semantics of
// the database store's queue (adapters/store/jobs.go) that storetest.Jobs
// checks: per-kind leases, unique keys while a job is pending or running,
// fair claims across accounts and endpoints, and rescue of expired leases.
// One lock makes every call atomic, so concurrent claims never share a job.
//
// It forgets everything when the process ends: it serves tests and
// single-process development, not at-least-once across restarts.
//
// The zero Queue is not usable; NewQueue makes one.
type Queue struct {
	now func() time.Time

	mu     sync.Mutex
	nextID int64
	jobs   map[int64]*queueJob
	// unique holds the job of each unique key while the job is pending or
	// running (the database's partial unique index).
	unique map[string]int64

	subsMu sync.Mutex
	subs   map[chan struct{}]struct{}
}

// queueJob is one row of the queue. Times are unix microseconds, as the
// database keeps them, so comparisons round as the database's do.
type queueJob struct {
	id          int64
	kind        string
	payload     []byte
	state       jobs.State
	attempt     int
	maxAttempts int
	uniqueKey   string
	paceKey     string
	accountID   string
	endpointKey string
	runAt       int64
	createdAt   int64
	attemptedAt int64
	// leaseOwner and leaseUntil are set while the job is running.
	leaseOwner string
	leaseUntil int64
	lastError  string
	finishedAt int64
}

// NewQueue returns an empty queue whose enqueues are timed by now
// (time.Now when nil); the runner's calls bring their own times.
func NewQueue(now func() time.Time) *Queue {
	if now == nil {
		now = time.Now
	}
	return &Queue{now: now, jobs: map[int64]*queueJob{}, unique: map[string]int64{}, subs: map[chan struct{}]struct{}{}}
}

func queueMicros(t time.Time) int64 { return t.UnixMicro() }

func queueTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

func queuePending(s jobs.State) bool { return s == jobs.StateAvailable || s == jobs.StateRetryable }

func (j *queueJob) domain() jobs.Job {
	return jobs.Job{
		ID: j.id, Kind: j.kind, Payload: slices.Clone(j.payload), Attempt: j.attempt, MaxAttempts: j.maxAttempts,
		UniqueKey: j.uniqueKey, PaceKey: j.paceKey, AccountID: j.accountID, EndpointKey: j.endpointKey,
		RunAt: queueTime(j.runAt), CreatedAt: queueTime(j.createdAt),
	}
}

// JobWakeups returns a channel that receives when jobs may have become
// due (enqueued, retried, put back or rescued), and a function to stop
// receiving.
func (q *Queue) JobWakeups() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	q.subsMu.Lock()
	q.subs[ch] = struct{}{}
	q.subsMu.Unlock()
	return ch, func() {
		q.subsMu.Lock()
		delete(q.subs, ch)
		q.subsMu.Unlock()
	}
}

// queueWake tells every subscriber, without waiting for any.
func (q *Queue) queueWake() {
	q.subsMu.Lock()
	defer q.subsMu.Unlock()
	for ch := range q.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// add stores a new job, or returns the job holding p's unique key; q.mu
// is held.
func (q *Queue) add(p jobs.EnqueueParams, now int64) int64 {
	if p.UniqueKey != "" {
		if id, ok := q.unique[p.UniqueKey]; ok {
			return id
		}
	}
	runAt := now
	if !p.RunAt.IsZero() {
		runAt = queueMicros(p.RunAt)
	}
	payload := slices.Clone(p.Payload)
	if payload == nil {
		payload = []byte{}
	}
	q.nextID++
	j := &queueJob{
		id: q.nextID, kind: p.Kind, payload: payload, state: jobs.StateAvailable,
		maxAttempts: cmp.Or(p.MaxAttempts, jobs.DefaultMaxAttempts),
		uniqueKey:   p.UniqueKey, paceKey: p.PaceKey, accountID: p.AccountID, endpointKey: p.EndpointKey,
		runAt: runAt, createdAt: now,
	}
	q.jobs[j.id] = j
	if j.uniqueKey != "" {
		q.unique[j.uniqueKey] = j.id
	}
	return j.id
}

// EnqueueJob adds a job and returns its id. With a UniqueKey that a
// pending or running job already has, nothing is added and that job's id
// is returned.
func (q *Queue) EnqueueJob(ctx context.Context, p jobs.EnqueueParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", p.Kind, err)
	}
	q.mu.Lock()
	id := q.add(p, queueMicros(q.now()))
	q.mu.Unlock()
	q.queueWake()
	return id, nil
}

// Enqueue adds a write batch's jobs, all or none: a batch enqueues new
// work only, so a job that is invalid or has a UniqueKey fails the call
// and nothing is added. An in-memory committer hands it a batch's Jobs.
func (q *Queue) Enqueue(ctx context.Context, ps []jobs.EnqueueParams) error {
	for _, p := range ps {
		if err := p.Validate(); err != nil {
			return err
		}
		if p.UniqueKey != "" {
			return fmt.Errorf("job %s: a batch enqueues new work only, without a unique key", p.Kind)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("enqueue jobs: %w", err)
	}
	if len(ps) == 0 {
		return nil
	}
	q.mu.Lock()
	now := queueMicros(q.now())
	for _, p := range ps {
		q.add(p, now)
	}
	q.mu.Unlock()
	q.queueWake()
	return nil
}

// CancelJobs cancels the pending job with the unique key, if any; a
// running one finishes its attempt (and may still retry, as the
// database's does). It returns how many it cancelled.
func (q *Queue) CancelJobs(ctx context.Context, uniqueKey string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("cancel jobs: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	id, ok := q.unique[uniqueKey]
	if !ok || !queuePending(q.jobs[id].state) {
		return 0, nil
	}
	j := q.jobs[id]
	j.state, j.finishedAt = jobs.StateCancelled, queueMicros(q.now())
	q.dropUnique(j)
	return 1, nil
}

// dropUnique frees a finished job's unique key; q.mu is held.
func (q *Queue) dropUnique(j *queueJob) {
	if j.uniqueKey != "" && q.unique[j.uniqueKey] == j.id {
		delete(q.unique, j.uniqueKey)
	}
	j.uniqueKey = ""
}

// queueLeases says until when each kind of a claim or renewal is leased.
type queueLeases []jobs.Lease

// until is the lease end of a kind, and whether the kind is leased at
// all.
func (ls queueLeases) until(kind string) (int64, bool) {
	for _, l := range ls {
		if l.Kind == kind {
			return queueMicros(l.Until), true
		}
	}
	return 0, false
}

// ClaimJobs leases up to limit due jobs of the leases' kinds to worker,
// each until its kind's lease ends, and returns them with their attempt
// counted, in due order. The filter shares the claim across accounts and
// endpoints as jobs.ClaimFilter says, picking as the database store does:
// each account with pending jobs gives its oldest due jobs up to its
// ceiling's room (past the skipped keys' jobs, up to queueScanBeyond
// more), those within each account's share go first, in turns, then the
// borrowed rest, and no endpoint gives more than its room.
func (q *Queue) ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, f jobs.ClaimFilter) ([]jobs.Job, error) {
	if len(leases) == 0 || limit <= 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	ls := queueLeases(leases)
	n := queueMicros(now)
	q.mu.Lock()
	defer q.mu.Unlock()

	ceiling, share := f.AccountCeiling, f.AccountShare
	// An unbounded ceiling is one no account's room can reach past the
	// claim's limit.
	maxRunning := 0
	for _, r := range f.AccountsRunning {
		maxRunning = max(maxRunning, r)
	}
	if unbounded := limit + maxRunning; ceiling <= 0 || ceiling > unbounded {
		ceiling = unbounded
	}
	if share <= 0 || share > ceiling {
		share = ceiling
	}
	skipEndpoint, skipPace := queueSet(f.SkipEndpoints), queueSet(f.SkipPaceKeys)
	scanBeyond := 0
	if len(skipEndpoint) > 0 || len(skipPace) > 0 {
		scanBeyond = queueScanBeyond
	}

	// The accounts with pending jobs, and their due jobs of the kinds.
	due := map[string][]*queueJob{}
	for _, j := range q.jobs {
		if !queuePending(j.state) {
			continue
		}
		if _, leased := ls.until(j.kind); leased && j.runAt <= n {
			due[j.accountID] = append(due[j.accountID], j)
		} else if _, ok := due[j.accountID]; !ok {
			due[j.accountID] = nil
		}
	}
	accounts := make([]string, 0, len(due))
	for a := range due {
		accounts = append(accounts, a)
	}
	slices.Sort(accounts)

	type ranked struct {
		job      *queueJob
		rn       int
		borrowed bool
	}
	var all []ranked
	ern := map[string]int{}
	for _, a := range accounts {
		room := limit
		if a != "" {
			room = min(max(ceiling-f.AccountsRunning[a], 0), limit)
		}
		js := due[a]
		slices.SortFunc(js, queueDueOrder)
		js = js[:min(len(js), room+scanBeyond)]
		rn := 0
		for _, j := range js {
			if rn == room {
				break
			}
			if j.endpointKey != "" && skipEndpoint[j.endpointKey] || j.paceKey != "" && skipPace[j.paceKey] {
				continue
			}
			rn++
			if e := j.endpointKey; e != "" {
				// An account's jobs are in due order, and an endpoint is
				// one account's.
				ern[e]++
				if r, bounded := f.EndpointRoom[e]; bounded && ern[e] > r {
					continue
				}
			}
			all = append(all, ranked{j, rn, a != "" && f.AccountsRunning[a]+rn > share})
		}
	}
	slices.SortFunc(all, func(x, y ranked) int {
		switch {
		case x.borrowed != y.borrowed:
			if x.borrowed {
				return 1
			}
			return -1
		case x.rn != y.rn:
			return cmp.Compare(x.rn, y.rn)
		}
		return queueDueOrder(x.job, y.job)
	})

	out := make([]jobs.Job, 0, min(len(all), limit))
	for _, r := range all[:min(len(all), limit)] {
		j := r.job
		until, _ := ls.until(j.kind)
		j.state, j.attempt, j.attemptedAt = jobs.StateRunning, j.attempt+1, n
		j.leaseOwner, j.leaseUntil = worker, until
		out = append(out, j.domain())
	}
	// Within an account in due order, as the claim picked them.
	slices.SortFunc(out, func(a, b jobs.Job) int {
		return cmp.Or(a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// queueScanBeyond is how many of an account's due jobs past its room a
// claim reads to find jobs of keys it does not skip: the database store's
// bound, kept so that claims pick the same jobs.
const queueScanBeyond = 256

func queueDueOrder(a, b *queueJob) int {
	return cmp.Or(cmp.Compare(a.runAt, b.runAt), cmp.Compare(a.id, b.id))
}

func queueSet(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// held calls fn with each running job worker holds among ids, once each,
// in the order of ids; q.mu is held.
func (q *Queue) held(worker string, ids []int64, fn func(j *queueJob)) {
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		j, ok := q.jobs[id]
		if !ok || seen[id] || j.state != jobs.StateRunning || j.leaseOwner != worker {
			continue
		}
		seen[id] = true
		fn(j)
	}
}

// RenewLeases extends the leases worker still holds among ids, each to
// its kind's lease end, and returns the ids it renewed. An id it does not
// return is no longer worker's: finished, or rescued after its lease
// ended.
func (q *Queue) RenewLeases(ctx context.Context, worker string, ids []int64, leases []jobs.Lease) ([]int64, error) {
	if len(ids) == 0 || len(leases) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("renew job leases: %w", err)
	}
	ls := queueLeases(leases)
	q.mu.Lock()
	defer q.mu.Unlock()
	var renewed []int64
	q.held(worker, ids, func(j *queueJob) {
		if until, ok := ls.until(j.kind); ok {
			j.leaseUntil = max(j.leaseUntil, until) // a renewal only extends
			renewed = append(renewed, j.id)
		}
	})
	return renewed, nil
}

// release ends a running job's lease; q.mu is held.
func (j *queueJob) release() { j.leaseOwner, j.leaseUntil = "", 0 }

// CompleteJobs marks the jobs worker still holds done; a job whose lease
// was lost (and may be running elsewhere) is left alone.
func (q *Queue) CompleteJobs(ctx context.Context, worker string, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("complete jobs: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held(worker, ids, func(j *queueJob) {
		j.state, j.finishedAt = jobs.StateCompleted, queueMicros(now)
		j.release()
		q.dropUnique(j)
	})
	return nil
}

// RetryJob schedules the next attempt of a job worker holds.
func (q *Queue) RetryJob(ctx context.Context, worker string, id int64, runAt time.Time, lastErr string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("retry job %d: %w", id, err)
	}
	q.mu.Lock()
	q.held(worker, []int64{id}, func(j *queueJob) {
		j.state, j.runAt, j.lastError = jobs.StateRetryable, queueMicros(runAt), queueTruncate(lastErr)
		j.release()
	})
	q.mu.Unlock()
	q.queueWake()
	return nil
}

// SnoozeJob puts a job worker holds back, due at runAt, without counting
// the attempt: the runner did not start it.
func (q *Queue) SnoozeJob(ctx context.Context, worker string, id int64, runAt time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("snooze job %d: %w", id, err)
	}
	q.mu.Lock()
	q.held(worker, []int64{id}, func(j *queueJob) {
		j.state, j.runAt, j.attempt = jobs.StateAvailable, queueMicros(runAt), j.attempt-1
		j.release()
	})
	q.mu.Unlock()
	q.queueWake()
	return nil
}

// ReleaseJobs puts jobs that worker claimed and did not start back in the
// queue as they were: due when they were (so in their place), their
// attempt given back.
func (q *Queue) ReleaseJobs(ctx context.Context, worker string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release jobs: %w", err)
	}
	q.mu.Lock()
	q.held(worker, ids, func(j *queueJob) {
		j.state, j.attempt = jobs.StateAvailable, j.attempt-1
		j.release()
	})
	q.mu.Unlock()
	q.queueWake()
	return nil
}

// KillJob marks a job worker holds dead, keeping its last error.
func (q *Queue) KillJob(ctx context.Context, worker string, id int64, now time.Time, lastErr string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kill job %d: %w", id, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held(worker, []int64{id}, func(j *queueJob) {
		j.state, j.finishedAt, j.lastError = jobs.StateDead, queueMicros(now), queueTruncate(lastErr)
		j.release()
		q.dropUnique(j)
	})
	return nil
}

// queueLost is the last error of a job whose lease ended.
const queueLost = "lease expired: the worker stopped or hung"

// RescueJobs returns jobs whose lease ended before now (their worker
// crashed or hung) to the queue, due at once. A job whose last attempt
// was lost this way gets one more, so that its handler can record the
// failure on the business row; only when that is lost too is the job
// marked dead. It returns how many it rescued and killed.
func (q *Queue) RescueJobs(ctx context.Context, now time.Time) (rescued, killed int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("rescue expired jobs: %w", err)
	}
	n := queueMicros(now)
	q.mu.Lock()
	for _, j := range q.jobs {
		if j.state != jobs.StateRunning || j.leaseUntil >= n {
			continue
		}
		j.lastError = queueLost
		j.release()
		if j.attempt > j.maxAttempts {
			j.state, j.finishedAt = jobs.StateDead, n
			q.dropUnique(j)
			killed++
			continue
		}
		j.state, j.runAt = jobs.StateRetryable, n
		rescued++
	}
	q.mu.Unlock()
	if rescued > 0 {
		q.queueWake()
	}
	return rescued, killed, nil
}

// PruneJobs deletes up to limit completed and cancelled jobs that
// finished before the cutoff, oldest id first; dead jobs stay.
func (q *Queue) PruneJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("prune jobs: %w", err)
	}
	b := queueMicros(before)
	q.mu.Lock()
	defer q.mu.Unlock()
	var old []int64
	for id, j := range q.jobs {
		if (j.state == jobs.StateCompleted || j.state == jobs.StateCancelled) && j.finishedAt < b {
			old = append(old, id)
		}
	}
	slices.Sort(old)
	old = old[:min(len(old), max(limit, 0))]
	for _, id := range old {
		delete(q.jobs, id)
	}
	return len(old), nil
}

// NextJobAt is when the earliest pending job of the kinds becomes due;
// zero when none is pending.
func (q *Queue) NextJobAt(ctx context.Context, kinds []string) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("next job time: %w", err)
	}
	want := queueSet(kinds)
	q.mu.Lock()
	defer q.mu.Unlock()
	var next int64
	found := false
	for _, j := range q.jobs {
		if queuePending(j.state) && want[j.kind] && (!found || j.runAt < next) {
			next, found = j.runAt, true
		}
	}
	if !found {
		return time.Time{}, nil
	}
	return queueTime(next), nil
}

// JobStats summarises the pending and running work of each kind, for
// metrics, ordered by kind.
func (q *Queue) JobStats(ctx context.Context, now time.Time) ([]jobs.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("job stats: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tally(now, false, func(j *queueJob) bool {
		return queuePending(j.state) || j.state == jobs.StateRunning
	}), nil
}

var _ queue.Store = (*Queue)(nil)

// AccountJobStats summarises one account's pending, running and dead
// jobs of each kind, ordered by kind.
func (q *Queue) AccountJobStats(ctx context.Context, accountID string, now time.Time) ([]jobs.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("job stats: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tally(now, true, func(j *queueJob) bool {
		return j.accountID == accountID && (queuePending(j.state) || j.state == jobs.StateRunning || j.state == jobs.StateDead)
	}), nil
}

// tally counts the jobs that match by kind and state, ordered by kind,
// with the oldest ready job's time of each kind that has one; retrying
// ones too when countRetrying (as the stores count them only for an
// account). The caller holds q.mu.
func (q *Queue) tally(now time.Time, countRetrying bool, match func(*queueJob) bool) []jobs.Stat {
	n := queueMicros(now)
	byKind := map[string]*jobs.Stat{}
	oldest := map[string]int64{}
	for _, j := range q.jobs {
		if !match(j) {
			continue
		}
		s := byKind[j.kind]
		if s == nil {
			s = &jobs.Stat{Kind: j.kind}
			byKind[j.kind] = s
		}
		if countRetrying && j.state == jobs.StateRetryable {
			s.Retrying++
		}
		switch {
		case j.state == jobs.StateRunning:
			s.Running++
		case j.state == jobs.StateDead:
			s.Dead++
		case j.runAt <= n:
			s.Ready++
			if o, ok := oldest[j.kind]; !ok || j.runAt < o {
				oldest[j.kind] = j.runAt
			}
		default:
			s.Scheduled++
		}
	}
	out := make([]jobs.Stat, 0, len(byKind))
	for kind, s := range byKind {
		if o, ok := oldest[kind]; ok {
			s.OldestReady = queueTime(o)
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b jobs.Stat) int { return cmp.Compare(a.Kind, b.Kind) })
	return out
}

// QueuedJob is a job with where it is in its life, for tests and the
// operator's view of what a database would show in its jobs table.
type QueuedJob struct {
	jobs.Job
	State     jobs.State
	LastError string
	// LeaseOwner and LeaseUntil are set while the job runs.
	LeaseOwner string
	LeaseUntil time.Time
	// FinishedAt is set once the job completed, was cancelled or died.
	FinishedAt time.Time
}

// ErrNoSuchJob is the error of Lookup for an id the queue does not hold.
var ErrNoSuchJob = errors.New("memory queue: no such job")

// Lookup returns one job with its state; ErrNoSuchJob when there is none
// (never enqueued, or pruned).
func (q *Queue) Lookup(id int64) (QueuedJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	if !ok {
		return QueuedJob{}, ErrNoSuchJob
	}
	out := QueuedJob{Job: j.domain(), State: j.state, LastError: j.lastError, LeaseOwner: j.leaseOwner}
	if j.leaseOwner != "" {
		out.LeaseUntil = queueTime(j.leaseUntil)
	}
	if j.finishedAt != 0 {
		out.FinishedAt = queueTime(j.finishedAt)
	}
	return out, nil
}

// queueTruncate keeps stored errors bounded, as the database store does.
func queueTruncate(s string) string {
	const max = 2000
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
