package ratelimit

import (
	"context"
	"sync"
	"time"
)

// MemoryBuckets keeps buckets in this process: the store of a deployment
// that is one process (SQLite), of tests, and of a shared limiter while
// its database is away.
type MemoryBuckets struct {
	mu      sync.Mutex
	buckets map[string]*memoryBucket
}

type memoryBucket struct {
	tokens    float64
	updatedAt time.Time
}

// NewMemoryBuckets returns an empty store: every bucket full.
func NewMemoryBuckets() *MemoryBuckets {
	return &MemoryBuckets{buckets: map[string]*memoryBucket{}}
}

// bucket is key's bucket refilled up to now.
func (m *MemoryBuckets) bucket(key string, p Policy, now time.Time) *memoryBucket {
	b, ok := m.buckets[key]
	if !ok {
		b = &memoryBucket{tokens: float64(p.burst()), updatedAt: now}
		m.buckets[key] = b
	}
	if now.After(b.updatedAt) {
		b.tokens = p.refill(b.tokens, now.Sub(b.updatedAt))
		b.updatedAt = now
	}
	return b
}

// TakeTokens implements Buckets.
func (m *MemoryBuckets) TakeTokens(_ context.Context, key string, want int, perSecond float64, burst int, now time.Time) (int, float64, error) {
	p := Policy{PerSecond: perSecond, Burst: burst}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucket(key, p, now)
	taken := min(want, int(b.tokens))
	b.tokens -= float64(taken)
	return taken, b.tokens, nil
}

// ReturnTokens implements Buckets.
func (m *MemoryBuckets) ReturnTokens(_ context.Context, key string, n int, perSecond float64, burst int, now time.Time) error {
	p := Policy{PerSecond: perSecond, Burst: burst}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucket(key, p, now)
	b.tokens = min(b.tokens+float64(n), float64(p.burst()))
	return nil
}

// PruneBuckets implements Buckets.
func (m *MemoryBuckets) PruneBuckets(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for key, b := range m.buckets {
		if b.updatedAt.Before(before) {
			delete(m.buckets, key)
			n++
		}
	}
	return n, nil
}
