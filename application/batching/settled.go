package batching

import (
	"sync"
	"sync/atomic"
)

// Settled keeps values that, once found, never change: the owner of an
// email address, a thread a user has written in. They are kept without
// expiry, at most max of them; past that, new ones are read each time.
type Settled[K comparable, V any] struct {
	max  int64
	kept sync.Map
	n    atomic.Int64
}

// NewSettled keeps at most max values.
func NewSettled[K comparable, V any](max int) *Settled[K, V] {
	return &Settled[K, V]{max: int64(max)}
}

// Get returns key's value if it is kept.
func (s *Settled[K, V]) Get(key K) (V, bool) {
	v, ok := s.kept.Load(key)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Keep keeps key's value, while there is room.
func (s *Settled[K, V]) Keep(key K, v V) {
	if s.n.Add(1) <= s.max {
		s.kept.Store(key, v)
	}
}
