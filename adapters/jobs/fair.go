package jobs

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Fairness defaults.
const (
	// DefaultAccountShare is the fraction of a runner's workers that one
	// account's jobs may hold at once.
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

// fairness keeps one account, or one endpoint, from holding the runner's
// workers: the account share, the per-endpoint limit and each endpoint's
// circuit breaker. It counts the jobs this runner holds (claimed and not
// yet finished) per account and per endpoint, and turns them into the
// ClaimFilter of the next claim, so that jobs of an account or endpoint
// without room stay in the queue, holding no worker, until room frees.
//
// Everything here is per runner (per process): with R replicas an account
// may hold R shares and an endpoint see R times the limit, and each
// replica's breaker learns of an endpoint's failures by itself.
type fairness struct {
	accountShare int
	// accountCeiling is what one account may hold while no other
	// account's job is due (it borrows what they leave idle): all the
	// workers but a reserve (an eighth of them, at most accountReserve),
	// so that the share costs a lone busy account little and a
	// newcomer's job still starts at once.
	accountCeiling int
	// endpointLimit bounds the attempts to one stalled endpoint; stall is
	// how long an endpoint may go without an answer before it binds
	// (running.stalled).
	endpointLimit int
	stall         time.Duration
	failures      int
	open, maxOpen time.Duration

	mu        sync.Mutex
	accounts  map[string]int
	endpoints map[string]running
	breakers  map[string]*breaker
}

// running counts an endpoint's jobs held, and when it last made progress: when its first job started, or one got
// an answer (a failure marked jobs.EndpointDown is none).
type running struct {
	n        int
	progress time.Time
}

// stalled says whether the endpoint's limit binds: none of its attempts
// got an answer within the stall (nor did it start one, from none
// running).
// An endpoint that answers is bounded by its account's share alone, so a
// busy receiver gets as many deliveries at once as before; one that
// hangs holds at most its limit.
func (r running) stalled(now time.Time, stall time.Duration) bool {
	return r.n > 0 && now.Sub(r.progress) > stall
}

// breaker is the circuit breaker of one endpoint. Closed, it counts
// consecutive failed attempts; at the threshold it opens until openUntil,
// and the endpoint's jobs are not claimed (nor started, if claimed before)
// meanwhile. After that one job is claimed as a probe (half-open): its
// success closes the breaker, its failure opens it again for twice as long.
type breaker struct {
	failed    int
	openings  int // consecutive openings, for the growing back-off
	openUntil time.Time
	probe     int64 // the probing job's id; 0 when none runs
}

// accountReserve bounds the workers a lone busy account leaves idle for a
// newcomer: enough for the newcomer's first jobs to start at once, while
// the rest of its share frees as the busy account's jobs end. A larger
// reserve leaves a lone account's claims short of workers: each claim
// takes only what the ceiling leaves, and deliveries slow with it.
const accountReserve = 16

func newFairness(cfg Config) *fairness {
	share := max(1, int(math.Ceil(cfg.AccountShare*float64(cfg.Workers))))
	ceiling := max(share, cfg.Workers-min(max(1, cfg.Workers/8), accountReserve))
	return &fairness{
		accountShare:   share,
		accountCeiling: ceiling,
		endpointLimit:  cfg.EndpointLimit,
		stall:          cfg.EndpointStall,
		failures:       cfg.BreakerFailures,
		open:           cfg.BreakerOpen,
		maxOpen:        cfg.BreakerMaxOpen,
		accounts:       map[string]int{},
		endpoints:      map[string]running{},
		breakers:       map[string]*breaker{},
	}
}

// state is where an endpoint's breaker is at now.
type breakerState int

const (
	closed breakerState = iota
	open
	halfOpen // open until passed, no probe running yet: one may be claimed
	probing
)

func (b *breaker) state(now time.Time) breakerState {
	switch {
	case b == nil || b.openUntil.IsZero():
		return closed
	case b.probe != 0:
		return probing
	case now.Before(b.openUntil):
		return open
	}
	return halfOpen
}

// filter is what the next claim may take: each account up to its share
// while others have jobs due and up to the ceiling otherwise, counting
// what it runs here; no endpoint at its limit or with its breaker open
// (or half-open with a probe running or claimed).
func (f *fairness) filter(now time.Time) jobs.ClaimFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := jobs.ClaimFilter{AccountShare: f.accountShare, AccountCeiling: f.accountCeiling}
	if len(f.accounts) > 0 {
		c.AccountsRunning = make(map[string]int, len(f.accounts))
		for a, n := range f.accounts {
			c.AccountsRunning[a] = n
		}
	}
	for e, r := range f.endpoints {
		switch {
		case f.breakers[e].state(now) != closed, !r.stalled(now, f.stall):
		case r.n >= f.endpointLimit:
			c.SkipEndpoints = append(c.SkipEndpoints, e)
		default:
			if c.EndpointRoom == nil {
				c.EndpointRoom = map[string]int{}
			}
			c.EndpointRoom[e] = f.endpointLimit - r.n
		}
	}
	for e, b := range f.breakers {
		switch st := b.state(now); {
		case st == open || st == probing || st == halfOpen && f.endpoints[e].n > 0:
			c.SkipEndpoints = append(c.SkipEndpoints, e)
		case st == halfOpen:
			if c.EndpointRoom == nil {
				c.EndpointRoom = map[string]int{}
			}
			c.EndpointRoom[e] = 1 // its probe
		}
	}
	sort.Strings(c.SkipEndpoints)
	return c
}

// bound says whether due jobs may be waiting for room under filter c:
// keys it skips or bounds, or an account at its ceiling.
func (f *fairness) bound(c jobs.ClaimFilter) bool {
	if len(c.SkipEndpoints)+len(c.SkipPaceKeys) > 0 {
		return true
	}
	for _, n := range c.AccountsRunning {
		if n >= c.AccountCeiling {
			return true
		}
	}
	return len(c.EndpointRoom) > 0
}

// room says whether a claimed job of an endpoint may be kept, within the
// endpoint's limit while it is stalled (a claim may take more of an
// endpoint's jobs than it has room for) and its breaker's state: a
// half-open endpoint keeps one job, its probe.
func (f *fairness) room(job jobs.Job, now time.Time) bool {
	if job.EndpointKey == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.endpoints[job.EndpointKey]
	switch f.breakers[job.EndpointKey].state(now) {
	case closed:
		return r.n < f.endpointLimit || !r.stalled(now, f.stall)
	case halfOpen:
		return r.n == 0
	}
	return false
}

// claimed counts a claimed job against its account and its endpoint. A
// job of a half-open endpoint becomes its probe.
func (f *fairness) claimed(job jobs.Job, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if job.AccountID != "" {
		f.accounts[job.AccountID]++
	}
	if job.EndpointKey != "" {
		r := f.endpoints[job.EndpointKey]
		if r.n == 0 {
			r.progress = now
		}
		r.n++
		f.endpoints[job.EndpointKey] = r
		if b := f.breakers[job.EndpointKey]; b.state(now) == halfOpen {
			b.probe = job.ID
		}
	}
}

// admit says whether a claimed job may start now: not while its
// endpoint's breaker is open (it opened after the claim), unless the job
// is the probe.
func (f *fairness) admit(job jobs.Job, now time.Time) bool {
	if job.EndpointKey == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.breakers[job.EndpointKey]
	switch b.state(now) {
	case closed:
		return true
	case probing:
		return b.probe == job.ID
	}
	return false
}

// finished releases a job's room and, when it ran (err is its outcome),
// tells its endpoint's breaker how the attempt went: a success closes the
// breaker; an EndpointDown failure counts towards opening it, and a failed
// probe opens it again at once, for longer; any other error is an answer
// from the endpoint, which closes a half-open breaker and else tells
// nothing.
func (f *fairness) finished(job jobs.Job, ran bool, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := job.AccountID; a != "" {
		if f.accounts[a]--; f.accounts[a] <= 0 {
			delete(f.accounts, a)
		}
	}
	if job.EndpointKey == "" {
		return
	}
	r := f.endpoints[job.EndpointKey]
	if ran && !jobs.IsEndpointDown(err) {
		r.progress = now // it answered
	}
	if r.n--; r.n > 0 {
		f.endpoints[job.EndpointKey] = r
	} else {
		delete(f.endpoints, job.EndpointKey)
	}
	b := f.breakers[job.EndpointKey]
	wasProbe := b != nil && b.probe == job.ID
	if wasProbe {
		b.probe = 0 // not tried: the next claim takes another probe
	}
	if !ran {
		return
	}
	switch {
	case err == nil, wasProbe && !jobs.IsEndpointDown(err):
		delete(f.breakers, job.EndpointKey)
	case !jobs.IsEndpointDown(err):
	case wasProbe:
		b.openings++
		b.openUntil = now.Add(outage.Backoff(b.openings, f.open, f.maxOpen))
	case b.state(now) != closed:
		// An attempt that started before the breaker opened.
	default:
		if b == nil {
			b = &breaker{}
			f.breakers[job.EndpointKey] = b
		}
		if b.failed++; b.failed >= f.failures {
			b.openings = 1
			b.openUntil = now.Add(f.open)
		}
	}
}

// nextProbe is the earliest time after now at which an open breaker
// half-opens, zero when none is open.
func (f *fairness) nextProbe(now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next time.Time
	for _, b := range f.breakers {
		if b.state(now) == open && (next.IsZero() || b.openUntil.Before(next)) {
			next = b.openUntil
		}
	}
	return next
}
