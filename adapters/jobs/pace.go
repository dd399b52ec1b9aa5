package jobs

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacers holds one limiter per (kind, pace key): a token bucket for the
// start rate and a count of running jobs for concurrency. Idle keys are
// forgotten.
type pacers struct {
	mu   sync.Mutex
	keys map[string]*pacer
	// full are the keys at their concurrency limit, kept as starts and
	// ends change them so that each claim need not look at every key.
	full  map[*pacer]struct{}
	swept time.Time
}

type pacer struct {
	key     string
	limiter *rate.Limiter // nil: no rate limit
	// running counts the key's jobs running, at most limit (0: no
	// concurrency limit); both under pacers.mu.
	running, limit int
	// contended is set once a job of the key found it full: only such
	// keys are left out of claims while full (see fullKeys).
	contended bool
	lastUsed  time.Time
}

func newPacers() *pacers { return &pacers{keys: map[string]*pacer{}, full: map[*pacer]struct{}{}} }

// get finds or makes the key's pacer; p.mu is held.
func (p *pacers) get(kind Kind, key string, now time.Time) *pacer {
	if now.Sub(p.swept) > 10*time.Minute {
		for k, v := range p.keys {
			if now.Sub(v.lastUsed) > 10*time.Minute && v.running == 0 {
				delete(p.keys, k)
			}
		}
		p.swept = now
	}
	id := kind.Name + "\x00" + key
	pc, ok := p.keys[id]
	if !ok {
		pc = &pacer{key: key}
		pace := kind.paceOf(key)
		if pace.PerSecond > 0 {
			pc.limiter = rate.NewLimiter(rate.Limit(pace.PerSecond), max(pace.Burst, 1))
		}
		pc.limit = max(pace.MaxConcurrent, 0)
		p.keys[id] = pc
	}
	pc.lastUsed = now
	return pc
}

// fullKeys lists the pace keys at their concurrency limit whose jobs have
// met the limit before: claims leave their jobs in the queue until one
// ends. Keys that never had two jobs due at once (most of a webhook's
// threads) are not listed: a claim's list of keys to leave out makes it
// read past their jobs, which costs every claim while the list is long.
func (p *pacers) fullKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.full) == 0 {
		return nil
	}
	keys := make([]string, 0, len(p.full))
	for pc := range p.full {
		if pc.contended {
			keys = append(keys, pc.key)
		}
	}
	return keys
}

// start counts a start of the key's job if its concurrency limit allows
// one, and returns its release.
func (p *pacers) start(kind Kind, key string) (*pacer, func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.get(kind, key, time.Now())
	if pc.limit == 0 {
		return pc, func() {}, true
	}
	if pc.running >= pc.limit {
		pc.contended = true
		return pc, nil, false
	}
	pc.running++
	if pc.running == pc.limit {
		p.full[pc] = struct{}{}
	}
	return pc, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		pc.running--
		delete(p.full, pc)
	}, true
}

// acquire takes one of the key's concurrency places, without waiting, and
// waits, at most maxWait, for its start rate. It returns a release
// function, or false and the time to try again: zero when the key is at
// its concurrency limit (the job keeps its place in the queue, which the
// claims skip while the key is full), else when the rate allows a start.
func (p *pacers) acquire(ctx context.Context, kind Kind, key string, maxWait time.Duration, now func() time.Time) (func(), time.Time, bool) {
	// A worker that waited here for a slow key's running jobs would be
	// held from every other job.
	pc, release, ok := p.start(kind, key)
	if !ok {
		return nil, time.Time{}, false
	}
	if pc.limiter != nil {
		res := pc.limiter.Reserve()
		delay := res.Delay()
		if delay > maxWait {
			res.Cancel()
			release()
			return nil, now().Add(delay), false
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				res.Cancel()
				release()
				return nil, now(), false
			}
		}
	}
	return release, time.Time{}, true
}
