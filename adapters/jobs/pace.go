package jobs

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacers holds one limiter per (kind, pace key): a token bucket for the
// start rate and a semaphore for concurrency. Idle keys are forgotten.
type pacers struct {
	mu    sync.Mutex
	keys  map[string]*pacer
	swept time.Time
}

type pacer struct {
	limiter  *rate.Limiter // nil: no rate limit
	slots    chan struct{} // nil: no concurrency limit
	lastUsed time.Time
}

func newPacers() *pacers { return &pacers{keys: map[string]*pacer{}} }

func (p *pacers) get(kind Kind, key string, now time.Time) *pacer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.swept) > 10*time.Minute {
		for k, v := range p.keys {
			if now.Sub(v.lastUsed) > 10*time.Minute && len(v.slots) == 0 {
				delete(p.keys, k)
			}
		}
		p.swept = now
	}
	id := kind.Name + "\x00" + key
	pc, ok := p.keys[id]
	if !ok {
		pc = &pacer{}
		pace := kind.paceOf(key)
		if pace.PerSecond > 0 {
			pc.limiter = rate.NewLimiter(rate.Limit(pace.PerSecond), max(pace.Burst, 1))
		}
		if pace.MaxConcurrent > 0 {
			pc.slots = make(chan struct{}, pace.MaxConcurrent)
		}
		p.keys[id] = pc
	}
	pc.lastUsed = now
	return pc
}

// acquire waits, at most maxWait, until the key may start another job. It
// returns a release function, or, when the wait would be longer, false and
// the time to try again.
func (p *pacers) acquire(ctx context.Context, kind Kind, key string, maxWait time.Duration, now func() time.Time) (func(), time.Time, bool) {
	pc := p.get(kind, key, time.Now())
	release := func() {}
	if pc.slots != nil {
		t := time.NewTimer(maxWait)
		select {
		case pc.slots <- struct{}{}:
			t.Stop()
			release = func() { <-pc.slots }
		case <-t.C:
			return nil, now().Add(maxWait), false
		case <-ctx.Done():
			t.Stop()
			return nil, now(), false
		}
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
