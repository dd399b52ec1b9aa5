// Package cache keeps the answers of the hottest lookups for a short time,
// as decorators around the ports that make them: a use case reads through
// its port as if nothing were kept, and each decorator states the rule it
// shortcuts and how long a change made elsewhere may go unseen.
//
//   - Credentials (accounts.Store): found keys for the TTL, answering only
//     the requests they authenticate (a refused one reads the database, so
//     an unknown key and a wrong secret cost the same); a revocation seen
//     through the port (this process's, or one found by WatchRevocations)
//     forgets the key at once.
//   - Credentials by id (accounts.Store), what dashboard sessions check
//     their credential with: found ones for the TTL, forgotten with the
//     key's entry on a revocation.
//   - Account holdings (accounts.Store): what an account owns, by the
//     account's version, which every change moves on: never stale.
//   - Sending numbers (messaging.Store): found numbers for the TTL; a
//     number changed through this process is read again at once.
//   - Sendable threads (messaging.Store): an individual thread once its
//     user has written (from then on it stays sendable) for the TTL.
//   - Sender addresses (email.Store): found addresses for the TTL.
//
// Only reads made outside a transaction are served from the caches: a
// transaction always reads the database. Every cache is bounded (the least
// recently used entries go first) and every entry expires (the expirable
// LRU of hashicorp/golang-lru); concurrent misses of one key share one read
// (x/sync's singleflight).
package cache

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// Caches holds the caches one process shares between its decorators.
type Caches struct {
	credentials *table[account.Credential]
	// credentialsByID are found credentials by id.
	credentialsByID *table[account.Credential]
	holdings        *table[accounts.Holdings]
	numbers         *table[account.Number]
	threads         *table[messaging.Thread]
	senders         *table[account.EmailAddress]
}

// Options size the caches.
type Options struct {
	// TTL bounds how long a kept answer is used; zero or less keeps
	// nothing (every read goes to the port).
	TTL time.Duration
	// MaxEntries bounds each cache; DefaultMaxEntries when zero.
	MaxEntries int
}

// DefaultMaxEntries bounds each cache unless Options say otherwise.
const DefaultMaxEntries = 100_000

// New builds the caches.
func New(o Options) *Caches {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	return &Caches{
		credentials:     newTable[account.Credential](o),
		credentialsByID: newTable[account.Credential](o),
		holdings:        newTable[accounts.Holdings](o),
		numbers:         newTable[account.Number](o),
		threads:         newTable[messaging.Thread](o),
		senders:         newTable[account.EmailAddress](o),
	}
}

// loadTimeout bounds a shared read: it outlives the caller that started
// it, which may leave before the others waiting for it.
const loadTimeout = 10 * time.Second

// answer is a read's answer as kept: its value, or its error (where a
// table's keep allows one).
type answer[V any] struct {
	value V
	err   error
}

// found keeps only answers that found a value.
func found[V any](a answer[V]) bool { return a.err == nil }

// table is one cache: answers by key, each kept until its TTL.
type table[V any] struct {
	entries *expirable.LRU[string, answer[V]]
	loads   singleflight.Group
	// generation moves on at every forget: a read that began before it
	// may have seen the forgotten state, and is not kept.
	generation atomic.Uint64
}

func newTable[V any](o Options) *table[V] {
	if o.TTL <= 0 {
		return nil
	}
	return &table[V]{entries: expirable.NewLRU[string, answer[V]](o.MaxEntries, nil, o.TTL)}
}

// get returns key's kept answer, or reads it; keep says whether an answer
// read may be kept. A nil table keeps nothing. A caller whose ctx ends
// stops waiting; the read it shares goes on for the others.
func (t *table[V]) get(ctx context.Context, key string, read func(ctx context.Context) (V, error), keep func(answer[V]) bool) (V, error) {
	if t == nil {
		return read(ctx)
	}
	anyKept := func(answer[V]) bool { return true }
	if a, ok := t.entries.Get(key); ok {
		return a.value, a.err
	}
	return t.load(ctx, key, anyKept, read, keep)
}

// getIf is get that answers from a kept value only when use(value) is
// true, and reads in every other case (nothing kept, a kept error, a kept
// value that use refuses).
func (t *table[V]) getIf(ctx context.Context, key string, use func(V) bool, read func(ctx context.Context) (V, error), keep func(answer[V]) bool) (V, error) {
	if t == nil {
		return read(ctx)
	}
	usable := func(a answer[V]) bool { return a.err == nil && use(a.value) }
	if a, ok := t.entries.Get(key); ok && usable(a) {
		return a.value, nil
	}
	return t.load(ctx, key, usable, read, keep)
}

// load reads key, shared with the concurrent loads of key, and keeps the
// answer when keep says so and nothing forgot the key meanwhile. A miss
// that reaches the shared read after another one ended answers from what
// that one kept, when usable accepts it: a miss is seen before joining,
// and the read it would have joined may end in between.
func (t *table[V]) load(ctx context.Context, key string, usable func(answer[V]) bool, read func(ctx context.Context) (V, error), keep func(answer[V]) bool) (V, error) {
	generation := t.generation.Load()
	shared := t.loads.DoChan(key, func() (any, error) {
		if a, ok := t.entries.Get(key); ok && usable(a) {
			return a, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		var a answer[V]
		a.value, a.err = read(ctx)
		if keep(a) && t.generation.Load() == generation {
			t.entries.Add(key, a)
		}
		return a, nil
	})
	select {
	case r := <-shared:
		a := r.Val.(answer[V])
		return a.value, a.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// forget drops key; a read of it under way is not kept.
func (t *table[V]) forget(key string) {
	if t == nil {
		return
	}
	t.generation.Add(1)
	t.loads.Forget(key)
	t.entries.Remove(key)
}

// forgetAll drops every key; reads under way are not kept.
func (t *table[V]) forgetAll() {
	if t == nil {
		return
	}
	t.generation.Add(1)
	t.entries.Purge()
}

// forgetValues drops every key whose kept value match says so; reads under
// way are not kept.
func (t *table[V]) forgetValues(match func(V) bool) {
	if t == nil {
		return
	}
	t.generation.Add(1)
	for _, key := range t.entries.Keys() {
		if a, ok := t.entries.Peek(key); ok && a.err == nil && match(a.value) {
			t.loads.Forget(key)
			t.entries.Remove(key)
		}
	}
}
