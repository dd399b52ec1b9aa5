// Package jobs runs the durable job queue: it claims due jobs from the
// store in batches, runs each kind's handler with a timeout, paces kinds
// per key, retries failures with back-off, records completions in batches,
// rescues jobs whose worker died, and prunes finished jobs. Every replica
// runs one Runner; the store's claims make sure each job is leased to one
// worker at a time.
//
// Leases are short and per kind: a claim leases each job for its own
// kind's lease, and a heartbeat renews the leases of the jobs still running
// every third of the shortest lease or so, so a handler may run longer than
// its lease. A job whose worker's process died is back in the queue as
// soon as the database shows the death (Liveness: a second or two), due
// as it was and its attempt given back; a job whose worker stalls, or died
// unseen, is back at most its kind's lease plus the rescue interval later.
// A job whose heartbeat finds its lease lost (or cannot renew it before it
// ends) has its context cancelled, since another worker may run it now.
//
// Work is shared fairly (fair.go) across every runner of a pool, on every
// replica: the jobs of one account hold at most Config.AccountShare of the
// pool's workers while other accounts have work (a lone busy account
// borrows the idle ones), the attempts to an endpoint that stopped
// answering at most Config.EndpointLimit, and an endpoint that keeps
// failing has its circuit breaker opened for all. What is over a bound is
// not claimed: it waits in the queue, holding no worker, so one account's
// hanging endpoint or backlog delays only that account. The claims count
// what runs in the queue itself; the runners share their workers
// (HeartbeatRunner) and what they learn of endpoints (RecordEndpoint)
// through the database.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Queue is the storage the runner needs. Every method that changes a
// running job names the worker and changes nothing when that worker no
// longer holds the job's lease.
type Queue interface {
	// ClaimJobs leases up to limit due jobs that the filter allows.
	ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, filter jobs.ClaimFilter) ([]jobs.Job, error)
	// ReleaseJobs puts claimed jobs that worker did not start back in the
	// queue as they were: due when they were, their attempt not used.
	ReleaseJobs(ctx context.Context, worker string, ids []int64) error
	// RenewLeases extends the leases worker still holds among ids and
	// returns the ids it renewed; a lease is never shortened (a renewal
	// that commits late leaves a later one's end).
	RenewLeases(ctx context.Context, worker string, ids []int64, leases []jobs.Lease) (renewed []int64, err error)
	CompleteJobs(ctx context.Context, worker string, ids []int64, now time.Time) error
	RetryJob(ctx context.Context, worker string, id int64, runAt time.Time, lastErr string) error
	SnoozeJob(ctx context.Context, worker string, id int64, runAt time.Time) error
	KillJob(ctx context.Context, worker string, id int64, now time.Time, lastErr string) error
	// RescueJobs returns jobs whose lease expired to the queue, their
	// attempt counted (their worker stalled, or died unseen).
	RescueJobs(ctx context.Context, now time.Time) (rescued, killed int, err error)
	// RescueDeadWorkers returns the running jobs of workers whose process
	// is known dead to the queue at once, due as they were, their attempt
	// given back (see jobs.MaxInterruptions).
	RescueDeadWorkers(ctx context.Context, now time.Time) (rescued, killed int, err error)
	// PruneJobs deletes up to limit completed and cancelled jobs of the
	// kinds that finished before the cutoff, and returns how many.
	PruneJobs(ctx context.Context, kinds []string, before time.Time, limit int) (int, error)
	NextJobAt(ctx context.Context, kinds []string) (time.Time, error)

	// HeartbeatRunner records that worker's runner of pool, with its
	// workers, lives, and returns what the pool's live runners hold;
	// RemoveRunner takes it out at once.
	HeartbeatRunner(ctx context.Context, worker, pool string, workers int) (jobs.RunnerPool, error)
	RemoveRunner(ctx context.Context, worker, pool string) error
	// Breakers reads the endpoints' shared state; RecordEndpoint applies
	// what worker learned of one under the policy; TakeProbe makes worker
	// the prober of a half-open breaker, holding it shut to others for
	// hold, and reports whether it did. PruneBreakers deletes the state
	// of endpoints nothing updated since before.
	Breakers(ctx context.Context) ([]jobs.Breaker, error)
	RecordEndpoint(ctx context.Context, worker string, e jobs.EndpointEvent, p jobs.BreakerPolicy) error
	TakeProbe(ctx context.Context, worker, endpoint string, hold time.Duration) (bool, error)
	PruneBreakers(ctx context.Context, before time.Time) error
}

// Liveness tells the runner what the database knows of processes' lives
// (the runner's WorkerID is then its process's registered id): deaths
// receives when processes were found dead, whose jobs are rescued then;
// returned when this process registered again after its registration
// lapsed (the database restarted, or dropped the connection holding it),
// whose leases are then checked at once, since another process may have
// rescued its jobs meanwhile. cancel ends the subscription.
type Liveness interface {
	Subscribe() (deaths, returned <-chan struct{}, cancel func())
}

// Wakeups tells the runner that jobs may have become due.
type Wakeups interface {
	JobWakeups() (<-chan struct{}, func())
}

// Handler does the work of one kind of job. It returns nil when the work is
// done, Permanent(err) when retrying cannot help, RetryAfter(d, err) to set
// the next attempt's time, and any other error to retry with the kind's
// back-off. It must honour ctx (the attempt's timeout and shutdown) and be
// idempotent (at least once: see domain/jobs).
type Handler interface {
	Work(ctx context.Context, job jobs.Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job jobs.Job) error

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, job jobs.Job) error { return f(ctx, job) }

// Kind is a job kind the runner serves.
type Kind struct {
	Name    string
	Handler Handler
	// Backoff times retries; jobs.DefaultBackoff when nil.
	Backoff jobs.Backoff
	// Timeout bounds one attempt; one minute when zero. It may be longer
	// than the lease: the heartbeat renews the lease while the job runs.
	Timeout time.Duration
	// Lease is how long a claim or a heartbeat holds a job of this kind:
	// when its worker dies, the job returns to the queue at most Lease plus
	// Config.RescueInterval later. Config.Lease when zero.
	Lease time.Duration
	// Pace limits jobs sharing a PaceKey, within this process. A job
	// whose key is at MaxConcurrent goes back to the queue without
	// holding a worker, and once that has happened to a key the runner's
	// claims leave it out while it is at the limit.
	Pace Pace
	// PaceFor, when set, chooses the limit per pace key instead (keys of
	// one kind may belong to channels with different limits).
	PaceFor func(paceKey string) Pace
}

func (k Kind) paced() bool { return k.Pace.enabled() || k.PaceFor != nil }

func (k Kind) paceOf(key string) Pace {
	if k.PaceFor != nil {
		return k.PaceFor(key)
	}
	return k.Pace
}

// Pace is a per-key limit: at most PerSecond starts per second (with
// Burst) and MaxConcurrent running at once. Zero fields are unlimited.
type Pace struct {
	PerSecond     float64
	Burst         int
	MaxConcurrent int
}

func (p Pace) enabled() bool { return p.PerSecond > 0 || p.MaxConcurrent > 0 }

// Config tunes a Runner; zero fields take the defaults.
type Config struct {
	// Workers bounds the jobs running at once in this process.
	Workers int
	// ClaimBatch bounds the jobs claimed per statement.
	ClaimBatch int
	// PollInterval is the longest an idle runner waits before looking for
	// due jobs without having been woken.
	PollInterval time.Duration
	// WakeGap is the least time from one claim to the next that a wake-up
	// starts; a wake-up sooner waits for the rest of it. Wake-ups come at
	// every commit that enqueues a job or appends an event, of any kind:
	// a runner whose kinds are seldom enqueued (cron runs) would claim,
	// and find nothing, at each. Zero: every wake-up claims at once. Due
	// times (NextJobAt) and freed workers are not held back.
	WakeGap time.Duration
	// RescueInterval is how often expired leases are looked for (and once
	// at start); 3 s when zero.
	RescueInterval time.Duration
	// Lease is the lease of kinds that set none; DefaultLease when zero.
	Lease time.Duration
	// HeartbeatInterval is how often the leases of running jobs are
	// renewed; a third of the shortest kind's lease when zero. It must be
	// at most half of every lease.
	HeartbeatInterval time.Duration
	// Retention is how long completed and cancelled jobs of this runner's
	// kinds are kept (each runner prunes its own kinds).
	Retention time.Duration
	// PruneInterval is how often finished jobs are pruned.
	PruneInterval time.Duration
	// MaxPaceWait is the longest a worker waits for a paced key's start
	// rate before it puts the job back for later.
	MaxPaceWait time.Duration
	// Pool names the runners that share their workers, one per process:
	// "jobs" when empty. An account's share is a share of the workers of
	// every live runner of the pool.
	Pool string
	// AccountShare is the fraction of the pool's workers that the jobs of
	// one account (jobs.EnqueueParams.AccountID) may hold at once, at
	// least one worker; DefaultAccountShare when zero, 1 for no bound. An
	// account at its share has its jobs left in the queue, holding no
	// worker, until one of its running jobs ends.
	AccountShare float64
	// EndpointLimit bounds the attempts to one stalled endpoint
	// (jobs.EnqueueParams.EndpointKey) running at once, across the pool;
	// DefaultEndpointLimit when zero. Jobs beyond it wait in the queue.
	EndpointLimit int
	// EndpointStall is how long an endpoint with attempts running may go
	// without one answering before EndpointLimit binds it;
	// DefaultEndpointStall when zero. An endpoint that answers is bounded
	// by its account's share alone.
	EndpointStall time.Duration
	// BreakerFailures consecutive failed attempts (jobs.EndpointDown) to
	// one endpoint open its circuit breaker for BreakerOpen, doubling
	// after each failed probe up to BreakerMaxOpen; meanwhile its jobs
	// stay in the queue and use no attempts. The defaults when zero.
	BreakerFailures             int
	BreakerOpen, BreakerMaxOpen time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// WorkerID names this runner in leases; random when empty. With
	// Liveness it is the process's registered id.
	WorkerID string
	// Liveness, when set, makes the jobs of dead processes come back at
	// once instead of after their leases; nil: leases alone, and the
	// rescue of dead processes' jobs every RescueInterval.
	Liveness Liveness
	Logger   *slog.Logger
	Metrics  *Metrics
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = 16 * runtime.GOMAXPROCS(0)
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = max(c.Workers, 100)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.RescueInterval <= 0 {
		c.RescueInterval = 3 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Retention <= 0 {
		c.Retention = 24 * time.Hour
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = time.Minute
	}
	if c.MaxPaceWait <= 0 {
		c.MaxPaceWait = 2 * time.Second
	}
	if c.Pool == "" {
		c.Pool = DefaultPool
	}
	if c.AccountShare <= 0 {
		c.AccountShare = DefaultAccountShare
	}
	if c.EndpointLimit <= 0 {
		c.EndpointLimit = DefaultEndpointLimit
	}
	if c.EndpointStall <= 0 {
		c.EndpointStall = DefaultEndpointStall
	}
	if c.BreakerFailures <= 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerOpen <= 0 {
		c.BreakerOpen = DefaultBreakerOpen
	}
	if c.BreakerMaxOpen <= 0 {
		c.BreakerMaxOpen = DefaultBreakerMaxOpen
	}
	c.BreakerMaxOpen = max(c.BreakerMaxOpen, c.BreakerOpen)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DefaultPool is the pool of a runner that names none.
const DefaultPool = "jobs"

// DefaultLease is the lease of a kind that sets none: a job of a dead
// process is back in the queue within DefaultLease plus the rescue
// interval (3 s by default).
const DefaultLease = 20 * time.Second

// ErrLeaseLost is the cause of a job's cancelled context when its worker
// no longer holds the job's lease: the heartbeat found it rescued, or could
// not renew it before it ended. Another worker may be running the job.
var ErrLeaseLost = errors.New("job lease lost")

// Runner claims and runs jobs. Start it once; Stop it once.
type Runner struct {
	cfg   Config
	queue Queue
	wake  Wakeups
	kinds map[string]Kind
	names []string
	pace  *pacers
	fair  *fairness

	inflight  atomic.Int64
	held      heldJobs
	slotFreed chan struct{}
	// lastClaim is when the fetch loop last claimed (see Config.WakeGap);
	// only the fetch loop touches it.
	lastClaim time.Time
	// claimed hands claimed jobs to the Workers goroutines that run them,
	// which live as long as the runner (a goroutine per job would start
	// each on a small stack that its handler grows again).
	claimed chan claimedJob
	done    chan int64 // completed job ids, recorded in batches

	// Outages of the database, each logged once.
	claimOutage, renewOutage, rescueOutage *outage.Tracker
	// recordOutage covers the writes of outcomes and completions.
	recordOutage *outage.Tracker

	// teamOutage covers the heartbeat and the reads of the shared
	// breakers.
	teamOutage *outage.Tracker

	fetchCtx, workCtx, beatCtx      context.Context
	stopFetch, cancelWork, stopBeat context.CancelFunc
	fetchWG, workWG, bookWG, beatWG sync.WaitGroup
	started                         atomic.Bool
}

// New builds a runner for the given kinds.
func New(queue Queue, wake Wakeups, cfg Config, kinds ...Kind) (*Runner, error) {
	cfg.defaults()
	r := &Runner{
		cfg: cfg, queue: queue, wake: wake, kinds: map[string]Kind{}, pace: newPacers(),
		slotFreed: make(chan struct{}, 1), done: make(chan int64, 4096), claimed: make(chan claimedJob, cfg.Workers),
	}
	for _, k := range kinds {
		if k.Name == "" || k.Handler == nil {
			return nil, errors.New("job kind needs a name and a handler")
		}
		if _, dup := r.kinds[k.Name]; dup {
			return nil, fmt.Errorf("job kind %q registered twice", k.Name)
		}
		if k.Backoff == nil {
			k.Backoff = jobs.DefaultBackoff
		}
		if k.Timeout <= 0 {
			k.Timeout = time.Minute
		}
		if k.Lease <= 0 {
			k.Lease = cfg.Lease
		}
		r.kinds[k.Name] = k
		r.names = append(r.names, k.Name)
	}
	sort.Strings(r.names)
	if r.cfg.HeartbeatInterval <= 0 {
		shortest := cfg.Lease
		for _, k := range r.kinds {
			shortest = min(shortest, k.Lease)
		}
		r.cfg.HeartbeatInterval = shortest / 3
	}
	for _, k := range r.kinds {
		if k.Lease < 2*r.cfg.HeartbeatInterval {
			return nil, fmt.Errorf("job kind %q: lease %s is shorter than two heartbeats (%s)", k.Name, k.Lease, r.cfg.HeartbeatInterval)
		}
	}
	r.held.jobs = map[int64]*heldJob{}
	r.fair = newFairness(r.cfg)
	r.claimOutage = outage.NewTracker(r.cfg.Logger, "claim jobs", r.cfg.PollInterval, 0)
	r.renewOutage = outage.NewTracker(r.cfg.Logger, "renew job leases", r.cfg.HeartbeatInterval, 0)
	r.rescueOutage = outage.NewTracker(r.cfg.Logger, "rescue jobs", r.cfg.RescueInterval, 0)
	r.recordOutage = outage.NewTracker(r.cfg.Logger, "record job outcomes", time.Second, 0)
	r.teamOutage = outage.NewTracker(r.cfg.Logger, "share the job runners' state", teamInterval, 0)
	return r, nil
}

// leases are the lease ends of the runner's kinds for a claim or renewal
// at now.
func (r *Runner) leases(now time.Time) []jobs.Lease {
	out := make([]jobs.Lease, len(r.names))
	for i, name := range r.names {
		out[i] = jobs.Lease{Kind: name, Until: now.Add(r.kinds[name].Lease)}
	}
	return out
}

// WorkerID is the name this runner's leases carry.
func (r *Runner) WorkerID() string { return r.cfg.WorkerID }

// Start begins claiming and running jobs, and the rescue and prune loops.
func (r *Runner) Start(context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("runner already started")
	}
	r.fetchCtx, r.stopFetch = context.WithCancel(context.Background())
	r.workCtx, r.cancelWork = context.WithCancel(context.Background())
	r.beatCtx, r.stopBeat = context.WithCancel(context.Background())
	r.bookWG.Add(1)
	go r.recordCompletions()
	r.beatWG.Add(1)
	go r.heartbeat()
	for range r.cfg.Workers {
		go func() {
			for c := range r.claimed {
				r.work(c.job, c.held)
			}
		}()
	}
	// The pool's workers and the breakers, known before the first claim.
	tctx, cancel := context.WithTimeout(r.fetchCtx, 5*time.Second)
	r.team(tctx, true)
	cancel()
	r.fetchWG.Add(4)
	go r.fetchLoop()
	go r.teamLoop()
	go func() {
		// A restarted process rescues its predecessor's jobs at once
		// instead of one interval later.
		r.rescue(r.fetchCtx)
		r.every(r.cfg.RescueInterval, r.rescue)
	}()
	go r.every(r.cfg.PruneInterval, r.prune)
	if r.cfg.Liveness != nil {
		deaths, returned, cancel := r.cfg.Liveness.Subscribe()
		r.fetchWG.Add(1)
		go func() {
			defer r.fetchWG.Done()
			defer cancel()
			r.watchLiveness(deaths, returned)
		}()
	}
	return nil
}

// watchLiveness rescues the jobs of processes found dead, and checks this
// runner's leases when its process registered again, until the runner
// stops fetching.
func (r *Runner) watchLiveness(deaths, returned <-chan struct{}) {
	for {
		select {
		case <-r.fetchCtx.Done():
			return
		case <-deaths:
			r.rescueDead(r.fetchCtx)
		case <-returned:
			// The heartbeat's renewal, now: a job rescued by another
			// process while this one's registration lapsed is cancelled
			// (ErrLeaseLost); the others keep their leases.
			r.renew(r.beatCtx)
		}
	}
}

// Stop stops claiming, lets running jobs finish until ctx ends, then
// cancels the rest; their leases expire and another runner retries them.
// Completions already known are recorded before Stop returns.
func (r *Runner) Stop(ctx context.Context) error {
	if !r.started.Load() {
		return nil
	}
	r.stopFetch()
	r.fetchWG.Wait()
	// The others' shares grow at once.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	if err := r.queue.RemoveRunner(rctx, r.cfg.WorkerID, r.cfg.Pool); err != nil {
		r.cfg.Logger.Warn("remove this job runner from the pool", "error", err)
	}
	cancel()
	close(r.claimed) // the workers end with their last job
	finished := make(chan struct{})
	go func() { r.workWG.Wait(); close(finished) }()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		r.cancelWork()
		err = fmt.Errorf("stopped with %d jobs still running: their leases will expire", r.inflight.Load())
		select {
		case <-finished:
		case <-time.After(time.Second):
		}
	}
	r.cancelWork()
	// Running jobs kept their leases until they ended.
	r.stopBeat()
	r.beatWG.Wait()
	close(r.done)
	r.bookWG.Wait()
	return err
}

// fetchLoop claims due jobs while there are free workers, and sleeps until
// woken, until the next job is due, or for the poll interval otherwise.
func (r *Runner) fetchLoop() {
	defer r.fetchWG.Done()
	if len(r.names) == 0 {
		<-r.fetchCtx.Done()
		return
	}
	wake, unsubscribe := r.wake.JobWakeups()
	defer unsubscribe()
	for r.fetchCtx.Err() == nil {
		free := r.cfg.Workers - int(r.inflight.Load())
		if free > 0 && free < r.cfg.Workers/16 {
			// Nearly every worker is busy and slots free one by one:
			// claiming each as it frees would cost a statement per job.
			// A short wait lets a few free up for one claim to fill.
			r.pause(claimGather)
			free = r.cfg.Workers - int(r.inflight.Load())
		}
		if free <= 0 {
			select {
			case <-r.fetchCtx.Done():
			case <-r.slotFreed:
			}
			continue
		}
		limit := min(free, r.cfg.ClaimBatch)
		r.lastClaim = time.Now()
		r.takeProbes()
		now := r.cfg.Now()
		filter := r.claimFilter(now)
		claimed, err := r.claim(limit, now, filter)
		if err != nil {
			wait := r.cfg.PollInterval
			if r.fetchCtx.Err() == nil {
				wait = r.claimOutage.Failed(err)
			}
			r.sleep(wake, nil, wait)
			continue
		}
		r.claimOutage.Succeeded()
		if claimed > 0 {
			// More may be due right now: a claim takes at most a part
			// of the limit from each account.
			continue
		}
		wait := r.idleWait()
		if wait > 0 {
			r.sleep(wake, nil, wait)
			continue
		}
		// Due jobs are left that the claim did not take: over their
		// account's or endpoint's bound (wherever the jobs holding it
		// run), behind an open breaker, or taken by another claimer. A
		// job's end here, a breaker's probe time or, for the others'
		// jobs, a short wait makes room.
		wait = min(r.cfg.PollInterval, boundWait)
		if at := r.fair.nextProbe(time.Now()); !at.IsZero() {
			wait = min(wait, max(time.Until(at), time.Millisecond))
		}
		if r.sleep(wake, r.slotFreed, wait) {
			// A job ended, making room for one more of its account,
			// endpoint or pace key: as when nearly every worker is busy,
			// a short wait lets a few more end for one claim to take.
			r.pause(claimGather)
		}
	}
}

// boundWait is how long a runner whose claim found only due jobs it could
// not take waits before claiming again, unless one of its jobs ends: the
// jobs holding their room may run elsewhere, where their ends do not wake
// it.
const boundWait = 250 * time.Millisecond

// claimFilter is what a claim may take: the fairness bounds and the pace
// keys at their concurrency limit.
func (r *Runner) claimFilter(now time.Time) jobs.ClaimFilter {
	f := r.fair.filter(now)
	f.SkipPaceKeys = r.pace.fullKeys()
	return f
}

// claimTimeout bounds one claim statement.
const claimTimeout = 30 * time.Second

// claimGather is how long a nearly full runner waits for more free workers
// before claiming.
const claimGather = 2 * time.Millisecond

// pause waits d or until the runner stops.
func (r *Runner) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.fetchCtx.Done():
	case <-t.C:
	}
}

func (r *Runner) claim(limit int, now time.Time, filter jobs.ClaimFilter) (int, error) {
	// A claim runs to its end even when the runner stops meanwhile.
	// Cancelled halfway, its statement may still commit on the server
	// (the driver cannot stop it) and the jobs it leased would wait out
	// their leases, unclaimed by anyone; finished, its jobs run, as the
	// running ones do at a stop.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.fetchCtx), claimTimeout)
	defer cancel()
	claimed, err := r.queue.ClaimJobs(ctx, r.cfg.WorkerID, r.leases(now), limit, now, filter)
	if err != nil {
		return 0, err
	}
	for _, job := range claimed {
		if ev := r.fair.claimed(job, now); ev != nil {
			r.tell(*ev)
		}
		r.inflight.Add(1)
		r.workWG.Add(1)
		h := r.held.add(r.workCtx, job, now.Add(r.kinds[job.Kind].Lease))
		// Never blocks: the jobs held, waiting or running, are at most
		// Workers, the channel's room.
		r.claimed <- claimedJob{job, h}
	}
	for _, ev := range r.fair.unusedProbes() {
		r.tell(ev)
	}
	return len(claimed), nil
}

// idleWait is how long to sleep when nothing more is due: until the next
// scheduled job, at most the poll interval; 0 when a job is due now.
func (r *Runner) idleWait() time.Duration {
	next, err := r.queue.NextJobAt(r.fetchCtx, r.names)
	if err != nil || next.IsZero() {
		return r.cfg.PollInterval
	}
	return min(max(next.Sub(r.cfg.Now()), 0), r.cfg.PollInterval)
}

// sleep waits d, or until the runner stops, is woken, or (when freed is
// not nil) a worker frees, and reports whether that ended it.
func (r *Runner) sleep(wake, freed <-chan struct{}, d time.Duration) (wasFreed bool) {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.fetchCtx.Done():
	case <-wake:
		// A wake-up within WakeGap of the last claim waits for the rest
		// of it, or for the timer, whichever ends first.
		if rest := r.cfg.WakeGap - time.Since(r.lastClaim); rest > 0 {
			gap := time.NewTimer(rest)
			defer gap.Stop()
			select {
			case <-r.fetchCtx.Done():
			case <-gap.C:
			case <-freed:
				return true
			case <-t.C:
			}
		}
	case <-freed:
		return true
	case <-t.C:
	}
	return false
}

// claimedJob is a claimed job on its way to a worker.
type claimedJob struct {
	job  jobs.Job
	held *heldJob
}

// work runs one claimed job and records its outcome. The job's lease is
// renewed by the heartbeat from its claim until its handler returns.
func (r *Runner) work(job jobs.Job, h *heldJob) {
	defer func() {
		r.inflight.Add(-1)
		select {
		case r.slotFreed <- struct{}{}:
		default:
		}
		r.workWG.Done()
	}()
	kind := r.kinds[job.Kind]
	// A job that does not start goes back to the queue as it was (its
	// due time kept, so its place in line too) without using an attempt.
	snooze := func(at time.Time) {
		if ev := r.fair.finished(job, false, nil, r.cfg.Now()); ev != nil {
			r.tell(*ev)
		}
		r.held.remove(h)
		if context.Cause(h.ctx) != ErrLeaseLost {
			r.record(r.queue.SnoozeJob(context.WithoutCancel(r.workCtx), r.cfg.WorkerID, job.ID, at), job, "snooze")
		}
	}
	if !r.fair.admit(job, time.Now()) {
		// Its endpoint's breaker opened after the claim.
		snooze(job.RunAt)
		return
	}
	if kind.paced() && job.PaceKey != "" {
		release, retryAt, ok := r.pace.acquire(h.ctx, kind, job.PaceKey, r.cfg.MaxPaceWait, r.cfg.Now)
		if !ok {
			if retryAt.IsZero() {
				retryAt = job.RunAt
			}
			snooze(retryAt)
			return
		}
		defer release()
	}
	ctx, cancel := context.WithTimeout(h.ctx, kind.Timeout)
	start := time.Now()
	err := run(ctx, kind.Handler, job)
	cancel()
	if ev := r.fair.finished(job, true, err, r.cfg.Now()); ev != nil {
		// Before the outcome: the next claims see the breaker.
		r.tell(*ev)
	}
	r.held.remove(h)
	r.cfg.Metrics.observe(job.Kind, time.Since(start), err)
	if err == nil {
		r.done <- job.ID
		return
	}
	if context.Cause(h.ctx) == ErrLeaseLost {
		// Not this worker's job any more: its outcome is the new
		// holder's to record (and the store would refuse it anyway).
		r.cfg.Metrics.outcome(job.Kind, "lease_lost")
		return
	}
	// Outcomes are recorded even while stopping, so a failure is not
	// retried sooner than its back-off says.
	bg := context.WithoutCancel(r.workCtx)
	now := r.cfg.Now()
	switch delay, explicit := jobs.RetryDelay(err); {
	case jobs.IsPermanent(err) || job.Attempt >= job.MaxAttempts:
		r.cfg.Metrics.outcome(job.Kind, "dead")
		r.record(r.queue.KillJob(bg, r.cfg.WorkerID, job.ID, now, err.Error()), job, "kill")
	case explicit:
		r.cfg.Metrics.outcome(job.Kind, "retry")
		r.record(r.queue.RetryJob(bg, r.cfg.WorkerID, job.ID, now.Add(delay), err.Error()), job, "retry")
	default:
		r.cfg.Metrics.outcome(job.Kind, "retry")
		r.record(r.queue.RetryJob(bg, r.cfg.WorkerID, job.ID, now.Add(kind.Backoff(job.Attempt)), err.Error()), job, "retry")
	}
}

// run calls the handler, turning a panic into an error so that one bad job
// cannot take the process down.
func run(ctx context.Context, h Handler, job jobs.Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return h.Work(ctx, job)
}

func (r *Runner) record(err error, job jobs.Job, what string) {
	if err != nil {
		// The lease will expire and the job will run again: at-least-once.
		r.recordOutage.Failed(fmt.Errorf("job %d (%s), outcome %s: %w", job.ID, job.Kind, what, err))
		return
	}
	r.recordOutage.Succeeded()
}

// recordCompletions writes completions in batches: one statement per batch
// instead of one per job. A crash before a batch is written makes those jobs
// run again, which at-least-once allows.
func (r *Runner) recordCompletions() {
	defer r.bookWG.Done()
	const batch = 500
	ids := make([]int64, 0, batch)
	flush := func() {
		if len(ids) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.queue.CompleteJobs(ctx, r.cfg.WorkerID, ids, r.cfg.Now())
		cancel()
		if err != nil {
			r.recordOutage.Failed(fmt.Errorf("%d completed jobs: %w", len(ids), err))
		} else {
			r.recordOutage.Succeeded()
		}
		ids = ids[:0]
	}
	for id := range r.done {
		ids = append(ids, id)
		// Take what else is already waiting, then write.
	drain:
		for len(ids) < batch {
			select {
			case more, ok := <-r.done:
				if !ok {
					break drain
				}
				ids = append(ids, more)
			default:
				break drain
			}
		}
		flush()
	}
	flush()
}

func (r *Runner) every(interval time.Duration, fn func(ctx context.Context)) {
	defer r.fetchWG.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.fetchCtx.Done():
			return
		case <-t.C:
			fn(r.fetchCtx)
		}
	}
}

// rescue returns the jobs of dead processes and the jobs whose lease
// expired to the queue.
func (r *Runner) rescue(ctx context.Context) {
	r.rescueDead(ctx)
	r.rescueBy(ctx, r.queue.RescueJobs, "rescued jobs with expired leases")
}

// rescueDead returns the jobs of dead processes to the queue.
func (r *Runner) rescueDead(ctx context.Context) {
	r.rescueBy(ctx, r.queue.RescueDeadWorkers, "rescued the jobs of dead processes")
}

// rescueBy runs one of the queue's rescues and logs what it did as done.
func (r *Runner) rescueBy(ctx context.Context, rescue func(context.Context, time.Time) (int, int, error), done string) {
	rescued, killed, err := rescue(ctx, r.cfg.Now())
	if err != nil {
		if ctx.Err() == nil {
			r.rescueOutage.Failed(err)
		}
		return
	}
	r.rescueOutage.Succeeded()
	if rescued+killed > 0 {
		r.cfg.Logger.Info(done, "retried", rescued, "dead", killed)
	}
}

func (r *Runner) prune(ctx context.Context) {
	before := r.cfg.Now().Add(-r.cfg.Retention)
	if err := r.queue.PruneBreakers(ctx, before); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("prune endpoint breakers", "error", err)
	}
	for ctx.Err() == nil {
		n, err := r.queue.PruneJobs(ctx, r.names, before, 1000)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("prune jobs", "error", err)
			}
			return
		}
		if n < 1000 {
			return
		}
	}
}

// teamInterval is how often a runner reads the endpoints' shared state and
// marks the endpoints it finds stalled; every teamBeats of them it also
// beats its heartbeat (which job_runners counts live for 3 s).
const (
	teamInterval = 250 * time.Millisecond
	teamBeats    = 4
)

// teamLoop keeps this runner's part of the state the pool's runners share,
// until the runner stops fetching.
func (r *Runner) teamLoop() {
	defer r.fetchWG.Done()
	t := time.NewTicker(teamInterval)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-r.fetchCtx.Done():
			return
		case <-t.C:
		}
		r.team(r.fetchCtx, n%teamBeats == 0)
	}
}

// team reads the endpoints' shared state, marks the endpoints this runner
// finds stalled, and with beat records its heartbeat and learns the pool's
// workers.
func (r *Runner) team(ctx context.Context, beat bool) {
	err := func() error {
		if beat {
			team, err := r.queue.HeartbeatRunner(ctx, r.cfg.WorkerID, r.cfg.Pool, r.cfg.Workers)
			if err != nil {
				return err
			}
			r.fair.joined(team)
		}
		at := time.Now()
		breakers, err := r.queue.Breakers(ctx)
		if err != nil {
			return err
		}
		r.fair.read(breakers, at)
		for _, e := range r.fair.toMark(r.cfg.Now()) {
			r.tell(jobs.EndpointEvent{EndpointKey: e, Outcome: jobs.EndpointStalled})
		}
		return nil
	}()
	if err != nil {
		if ctx.Err() == nil {
			r.teamOutage.Failed(err)
		}
		return
	}
	r.teamOutage.Succeeded()
}

// takeProbes takes the probes of the half-open breakers this runner may
// probe, for its next claim; another runner may take each first.
func (r *Runner) takeProbes() {
	for _, e := range r.fair.toProbe(time.Now()) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.fetchCtx), time.Second)
		taken, err := r.queue.TakeProbe(ctx, r.cfg.WorkerID, e, probeHold)
		cancel()
		if err != nil {
			r.recordOutage.Failed(fmt.Errorf("take the probe of %s: %w", e, err))
			continue
		}
		if taken {
			r.fair.probing(e)
		}
	}
}

// probeHold is how long a taken probe keeps a half-open breaker shut to
// the others while its taker claims: should the taker die meanwhile, the
// breaker is half-open again after it.
const probeHold = claimTimeout

// tell records what this runner learned of an endpoint; should that fail,
// the breakers learn it from the next attempt.
func (r *Runner) tell(e jobs.EndpointEvent) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.fetchCtx), 5*time.Second)
	defer cancel()
	if err := r.queue.RecordEndpoint(ctx, r.cfg.WorkerID, e, r.fair.policy); err != nil {
		r.recordOutage.Failed(fmt.Errorf("endpoint %s: %w", e.EndpointKey, err))
	}
}
