package jobs

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Fairness defaults.
const (
	// DefaultAccountShare is the fraction of the pool's workers (every
	// live runner's) that one account's jobs may hold at once.
	DefaultAccountShare = 0.25
	// DefaultEndpointLimit bounds the attempts to one stalled endpoint at
	// once; DefaultEndpointStall is how long without an answer stalls it.
	DefaultEndpointLimit = 4
	DefaultEndpointStall = time.Second
	// DefaultBreakerFailures is how many consecutive failed attempts open
	// an endpoint's circuit breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpen is how long a breaker first stays open; each
	// failed probe doubles it, up to DefaultBreakerMaxOpen.
	DefaultBreakerOpen    = 5 * time.Second
	DefaultBreakerMaxOpen = 5 * time.Minute
)

// fairness keeps one account, or one endpoint, from holding the workers of
// the pool (every live runner of it, across replicas): the account share,
// the per-endpoint limit and each endpoint's circuit breaker. The claims
// hold the bounds (jobs.ClaimFilter): they count the running jobs in the
// queue, whoever runs them, and skip the endpoints whose breaker is open.
// What the runner keeps here is what it tells the claims and the others:
//
//   - the pool's workers, from the runners' heartbeats, of which an
//     account's share and ceiling are parts, and its own jobs by account,
//     which are all the pool runs while it is the pool's only runner;
//   - its own attempts to each endpoint and when each last made progress,
//     from which it finds an endpoint stalled and marks it so for all;
//   - the shared breakers as last read, for the probes it takes, the jobs
//     it must not start and the outcomes worth telling (EndpointEvent).
type fairness struct {
	share         float64
	endpointLimit int
	stall         time.Duration
	policy        jobs.BreakerPolicy
	pool          string

	mu   sync.Mutex
	team jobs.RunnerPool
	// accounts are this runner's jobs, by account: all the pool runs
	// while it is the pool's only runner.
	accounts map[string]int
	// endpoints are this runner's attempts, by endpoint.
	endpoints map[string]running
	// breakers are the shared state as last read, with local deadlines.
	breakers map[string]breakerView
	// probes are the endpoints whose probe this runner took: the probe's
	// job once claimed, 0 before.
	probes map[string]int64
}

// running counts an endpoint's jobs held, and when it last made progress:
// when its first job started, or one got an answer (a failure marked
// jobs.EndpointDown is none).
type running struct {
	n        int
	progress time.Time
}

// stalled says whether the endpoint's limit binds: none of its attempts
// got an answer within the stall (nor did it start one, from none
// running). An endpoint that answers is bounded by its account's share
// alone, so a busy receiver gets as many deliveries at once as before; one
// that hangs holds at most its limit.
func (r running) stalled(now time.Time, stall time.Duration) bool {
	return r.n > 0 && now.Sub(r.progress) > stall
}

// breakerView is an endpoint's shared state (jobs.Breaker) as this runner
// last read it: openUntil is on the runner's monotonic clock.
type breakerView struct {
	failures  int
	open      bool
	openUntil time.Time
	probing   bool
	stalled   bool
}

// halfOpen says whether a probe may be taken: open, its time passed, no
// probe running.
func (b breakerView) halfOpen(at time.Time) bool {
	return b.open && !b.probing && !at.Before(b.openUntil)
}

// accountReserve bounds the workers a lone busy account leaves idle for a
// newcomer: enough for the newcomer's first jobs to start at once, while
// the rest of its share frees as the busy account's jobs end. A larger
// reserve leaves a lone account's claims short of workers: each claim
// takes only what the ceiling leaves, and deliveries slow with it.
const accountReserve = 16

func newFairness(cfg Config) *fairness {
	return &fairness{
		share:         cfg.AccountShare,
		endpointLimit: cfg.EndpointLimit,
		stall:         cfg.EndpointStall,
		policy:        jobs.BreakerPolicy{Failures: cfg.BreakerFailures, Open: cfg.BreakerOpen, MaxOpen: cfg.BreakerMaxOpen},
		pool:          cfg.Pool,
		team:          jobs.RunnerPool{Runners: 1, Workers: cfg.Workers},
		accounts:      map[string]int{},
		endpoints:     map[string]running{},
		breakers:      map[string]breakerView{},
		probes:        map[string]int64{},
	}
}

// accountBounds are an account's share of the pool's workers and its
// ceiling while no other account's job is due (it borrows what they leave
// idle): all the workers but a reserve (an eighth of them, at most
// accountReserve), so that the share costs a lone busy account little and
// a newcomer's job still starts at once.
func accountBounds(fraction float64, workers int) (share, ceiling int) {
	share = max(1, int(math.Ceil(fraction*float64(workers))))
	ceiling = max(share, workers-min(max(1, workers/8), accountReserve))
	return share, ceiling
}

// joined records what the pool's live runners hold (a heartbeat's
// answer).
func (f *fairness) joined(team jobs.RunnerPool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if team.Workers > 0 {
		f.team = team
	}
}

// read replaces the view of the shared breakers by what was read at at
// (the runner's monotonic clock).
func (f *fairness) read(breakers []jobs.Breaker, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.breakers = make(map[string]breakerView, len(breakers))
	for _, b := range breakers {
		f.breakers[b.EndpointKey] = breakerView{failures: b.Failures, open: b.Open, openUntil: at.Add(b.OpenFor),
			probing: b.Probing, stalled: b.Stalled}
	}
}

// filter is what the next claim may take: each account up to its share
// of the pool's workers while others have jobs due and up to the ceiling
// otherwise (counting this runner's jobs when it is the pool's only
// runner, the queue's otherwise); the endpoints this runner finds stalled
// at most their limit; its probes.
func (f *fairness) filter(now time.Time) jobs.ClaimFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	share, ceiling := accountBounds(f.share, f.team.Workers)
	c := jobs.ClaimFilter{Pool: f.pool, AccountShare: share, AccountCeiling: ceiling,
		EndpointLimit: f.endpointLimit, Shared: f.team.Runners > 1}
	if !c.Shared && len(f.accounts) > 0 {
		c.AccountsRunning = make(map[string]int, len(f.accounts))
		for a, n := range f.accounts {
			c.AccountsRunning[a] = n
		}
	}
	for e, r := range f.endpoints {
		if r.stalled(now, f.stall) {
			c.StalledEndpoints = append(c.StalledEndpoints, e)
		}
	}
	for e, job := range f.probes {
		if job == 0 {
			c.Probes = append(c.Probes, e)
		}
	}
	sort.Strings(c.StalledEndpoints)
	sort.Strings(c.Probes)
	return c
}

// toMark are the endpoints this runner finds stalled that its view of the
// shared state does not show marked; they count as marked from now on
// (until the next read says otherwise).
func (f *fairness) toMark(now time.Time) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for e, r := range f.endpoints {
		if b := f.breakers[e]; r.stalled(now, f.stall) && !b.stalled {
			b.stalled = true
			f.breakers[e] = b
			out = append(out, e)
		}
	}
	return out
}

// toProbe are the endpoints whose breaker is half-open, that this runner
// neither probes nor runs an attempt to.
func (f *fairness) toProbe(at time.Time) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for e, b := range f.breakers {
		if _, mine := f.probes[e]; b.halfOpen(at) && !mine && f.endpoints[e].n == 0 {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// probing records that this runner took the probe of endpoint e.
func (f *fairness) probing(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes[e] = 0
}

// claimed counts a claimed job against its account and its endpoint, and
// returns the event to record when it is the probe of a breaker this
// runner took.
func (f *fairness) claimed(job jobs.Job, now time.Time) *jobs.EndpointEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if job.AccountID != "" {
		f.accounts[job.AccountID]++
	}
	if job.EndpointKey == "" {
		return nil
	}
	r := f.endpoints[job.EndpointKey]
	if r.n == 0 {
		r.progress = now
	}
	r.n++
	f.endpoints[job.EndpointKey] = r
	if probe, mine := f.probes[job.EndpointKey]; mine && probe == 0 {
		f.probes[job.EndpointKey] = job.ID
		return &jobs.EndpointEvent{EndpointKey: job.EndpointKey, Outcome: jobs.EndpointProbeClaimed, Probe: job.ID}
	}
	return nil
}

// unusedProbes gives up the probes taken for a claim that brought no job
// of their endpoint, and returns the events to record.
func (f *fairness) unusedProbes() []jobs.EndpointEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []jobs.EndpointEvent
	for e, job := range f.probes {
		if job == 0 {
			delete(f.probes, e)
			out = append(out, jobs.EndpointEvent{EndpointKey: e, Outcome: jobs.EndpointProbeUnused})
		}
	}
	return out
}

// admit says whether a claimed job may start now: not while its
// endpoint's breaker is open (it opened after the claim), unless the job
// is this runner's probe.
func (f *fairness) admit(job jobs.Job, at time.Time) bool {
	if job.EndpointKey == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if probe, mine := f.probes[job.EndpointKey]; mine {
		return probe == job.ID
	}
	b := f.breakers[job.EndpointKey]
	return !b.open || b.halfOpen(at)
}

// finished releases a job's place and returns what its end tells the
// endpoint's shared state, if anything (err is the outcome when it ran):
// a success closes the breaker (worth telling only when the view shows
// one); an EndpointDown failure counts towards opening it (unless the view
// shows it open), and a failed probe opens it again, for longer; any other
// error is an answer from the endpoint, which closes a breaker it probed
// and clears a stall mark. A probe that did not run frees the probe.
func (f *fairness) finished(job jobs.Job, ran bool, err error, now time.Time) *jobs.EndpointEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := job.AccountID; a != "" {
		if f.accounts[a]--; f.accounts[a] <= 0 {
			delete(f.accounts, a)
		}
	}
	e := job.EndpointKey
	if e == "" {
		return nil
	}
	r := f.endpoints[e]
	answered := ran && !jobs.IsEndpointDown(err)
	if answered {
		r.progress = now
	}
	if r.n--; r.n > 0 {
		f.endpoints[e] = r
	} else {
		delete(f.endpoints, e)
	}
	var probe int64
	if p, mine := f.probes[e]; mine && p == job.ID {
		probe = job.ID
		delete(f.probes, e)
	}
	b, known := f.breakers[e]
	event := func(o jobs.EndpointOutcome) *jobs.EndpointEvent {
		return &jobs.EndpointEvent{EndpointKey: e, Outcome: o, Probe: probe}
	}
	switch {
	case !ran:
		if probe != 0 {
			return event(jobs.EndpointProbeUnused)
		}
		return nil
	case err == nil:
		if !known && probe == 0 {
			return nil
		}
		delete(f.breakers, e)
		return event(jobs.EndpointSucceeded)
	case answered:
		if probe == 0 && !b.stalled {
			return nil
		}
		b.stalled = false
		f.breakers[e] = b
		return event(jobs.EndpointAnswered)
	case probe == 0 && b.open:
		// An attempt that started before the breaker opened.
		return nil
	}
	return event(jobs.EndpointFailed)
}

// nextProbe is the earliest time after at (the monotonic clock) at which
// an open breaker half-opens, zero when none will.
func (f *fairness) nextProbe(at time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next time.Time
	for _, b := range f.breakers {
		if b.open && !b.probing && b.openUntil.After(at) && (next.IsZero() || b.openUntil.Before(next)) {
			next = b.openUntil
		}
	}
	return next
}
