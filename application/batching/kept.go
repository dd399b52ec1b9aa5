package batching

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Kept keeps values read from the store for a time (its TTL), for lookups
// so frequent that a read each would dominate the request: a credential
// per authenticated request, a sending number per send. A value is never
// used past its TTL, so a change made elsewhere (another replica) is seen
// within it. Around that rule it keeps its requests from waiting:
//   - the loads of one key that miss together share one read (Flight): an
//     entry in use expires under every request in flight at once;
//   - an entry in use is read again in the background in the last fifth of
//     its TTL, so the requests of a busy key go on with the kept value.
//
// A key found gone (a NotFound failure) is forgotten; other failures leave
// the kept value to expire.
type Kept[K comparable, V any] struct {
	ttl  time.Duration
	max  int
	now  func() time.Time
	load func(ctx context.Context, key K) (V, error)

	mu    sync.Mutex
	kept  map[K]keptValue[V]
	reads Flight[K, V]
}

type keptValue[V any] struct {
	value V
	until time.Time
	// refreshAt starts the background read; refreshing is set once one
	// has started, so there is one at a time.
	refreshAt  time.Time
	refreshing bool
}

// refreshTimeout bounds a background read.
const refreshTimeout = 10 * time.Second

// NewKept keeps what load reads for ttl (nothing when ttl is not positive),
// at most max keys: past that, expired keys are dropped, and if none were,
// all. load must not depend on its caller's transaction: it also runs in
// the background.
func NewKept[K comparable, V any](ttl time.Duration, max int, now func() time.Time, load func(ctx context.Context, key K) (V, error)) *Kept[K, V] {
	if now == nil {
		now = time.Now
	}
	return &Kept[K, V]{ttl: ttl, max: max, now: now, load: load, kept: map[K]keptValue[V]{}}
}

// Get returns key's kept value, or loads it.
func (k *Kept[K, V]) Get(ctx context.Context, key K) (V, error) {
	if v, ok := k.Peek(key); ok {
		return v, nil
	}
	return k.Load(ctx, key)
}

// Peek returns key's kept value, if it has one, and starts its background
// read when that is due.
func (k *Kept[K, V]) Peek(key K) (V, bool) {
	if k.ttl <= 0 {
		var zero V
		return zero, false
	}
	now := k.now()
	k.mu.Lock()
	e, ok := k.kept[key]
	if !ok || !now.Before(e.until) {
		k.mu.Unlock()
		var zero V
		return zero, false
	}
	refresh := !now.Before(e.refreshAt) && !e.refreshing
	if refresh {
		e.refreshing = true
		k.kept[key] = e
	}
	k.mu.Unlock()
	if refresh {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
			defer cancel()
			_, _ = k.Load(ctx, key)
		}()
	}
	return e.value, true
}

// Load reads key now, sharing the read with concurrent loads of key, and
// keeps what it finds.
func (k *Kept[K, V]) Load(ctx context.Context, key K) (V, error) {
	return k.reads.Do(ctx, key, func() (V, error) {
		v, err := k.load(ctx, key)
		k.Record(key, v, err)
		return v, err
	})
}

// Record keeps v, the answer of a read made elsewhere (in a transaction),
// or forgets key when err says it is gone.
func (k *Kept[K, V]) Record(key K, v V, err error) {
	switch {
	case err == nil:
		k.put(key, v)
	case failure.Is(err, failure.KindNotFound):
		k.Forget(key)
	}
}

func (k *Kept[K, V]) put(key K, v V) {
	if k.ttl <= 0 {
		return
	}
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.kept) >= k.max {
		for key, e := range k.kept {
			if !now.Before(e.until) {
				delete(k.kept, key)
			}
		}
		if len(k.kept) >= k.max {
			clear(k.kept)
		}
	}
	k.kept[key] = keptValue[V]{value: v, until: now.Add(k.ttl), refreshAt: now.Add(k.ttl - k.ttl/5)}
}

// Forget drops key, changed by this process.
func (k *Kept[K, V]) Forget(key K) {
	k.mu.Lock()
	delete(k.kept, key)
	k.mu.Unlock()
}

// Clear drops every key.
func (k *Kept[K, V]) Clear() {
	k.mu.Lock()
	clear(k.kept)
	k.mu.Unlock()
}
