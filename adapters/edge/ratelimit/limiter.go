package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
)

// StoreTimeout bounds a limiter's wait for its store: a lease normally
// takes a millisecond, and a request should not spend its deadline on
// its rate limit while the database is away.
const StoreTimeout = time.Second

// errStoreAway: the store failed lately; the fallback answers meanwhile.
var errStoreAway = errors.New("rate-limit store unavailable")

// LeaseTTL is how long a replica keeps tokens it leased and did not spend
// before it gives them back.
const LeaseTTL = time.Second

// Limiter applies one Policy to many keys over a Buckets store. Safe for
// concurrent use. When the store fails (the database away), the limiter
// falls back to buckets of its own process, so an outage neither refuses
// every request nor lifts the limit.
type Limiter struct {
	policy   Policy
	prefix   string
	buckets  Buckets
	fallback *Limiter // nil on a limiter over memory
	now      func() time.Time
	outage   *outage.Tracker
	// downUntil (unix nanoseconds): after a failed store call, requests
	// go straight to the fallback until then, rather than each waiting
	// for a store that is away.
	downUntil atomic.Int64

	mu     sync.Mutex
	keys   map[string]*keyState
	swept  time.Time
	pruned time.Time
	// sweeping is set while a sweep runs.
	sweeping atomic.Bool
}

// keyState is what this replica holds of one key's bucket.
type keyState struct {
	mu sync.Mutex
	// reserve are tokens leased from the store and not yet spent, leased
	// at leasedAt.
	reserve  int
	leasedAt time.Time
	// left is the shared bucket's content at the last lease, and emptyAt
	// when that was; until emptyUntil, the bucket is known to be empty.
	left       float64
	leftAt     time.Time
	emptyUntil time.Time
	// suspectUntil: the key failed an attempt recently (see Attempt).
	suspectUntil time.Time
	lastUsed     time.Time
	// forgotten: swept out of the limiter's map (see lock).
	forgotten bool
}

// Options configure a Limiter; zero fields take defaults.
type Options struct {
	// Prefix namespaces the limiter's keys in a shared store ("acct:").
	Prefix string
	Now    func() time.Time
	Logger *slog.Logger
}

// New returns a limiter of policy over buckets. Over a shared store it
// falls back to memory buckets while the store fails.
func New(policy Policy, buckets Buckets, opts Options) *Limiter {
	l := newLimiter(policy, buckets, opts)
	if _, inMemory := buckets.(*MemoryBuckets); !inMemory {
		l.fallback = newLimiter(policy, NewMemoryBuckets(), opts)
		l.outage = outage.NewTracker(opts.Logger, "shared rate limit "+policy.Name+" (limits are per replica meanwhile)", time.Second, 0)
	}
	return l
}

func newLimiter(policy Policy, buckets Buckets, opts Options) *Limiter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Limiter{policy: policy, prefix: opts.Prefix, buckets: buckets, now: opts.Now, keys: map[string]*keyState{}}
}

// Policy is the limiter's policy.
func (l *Limiter) Policy() Policy { return l.policy }

// Take spends a token of key when one is left. A disabled or nil limiter
// admits everything.
func (l *Limiter) Take(ctx context.Context, key string) Quota {
	if l == nil || !l.policy.Enabled() {
		return Quota{Policy: l.policyOrZero()}
	}
	st := l.lock(key)
	defer st.mu.Unlock()
	q, err := l.takeLocked(ctx, key, st)
	if err != nil {
		return l.fallback.Take(ctx, key)
	}
	return q
}

func (l *Limiter) policyOrZero() Policy {
	if l == nil {
		return Policy{}
	}
	return l.policy
}

// takeLocked spends one token of key, leasing more from the store when
// this replica holds none.
func (l *Limiter) takeLocked(ctx context.Context, key string, st *keyState) (Quota, error) {
	now := l.now()
	st.lastUsed = now
	if st.reserve == 0 {
		if now.Before(st.emptyUntil) {
			return l.refused(st, now), nil
		}
		if now.UnixNano() < l.downUntil.Load() {
			return Quota{}, errStoreAway
		}
		// Bounded by StoreTimeout alone: a request its client gave up on
		// says nothing about the store, and must not pass for an outage.
		storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StoreTimeout)
		taken, left, err := l.buckets.TakeTokens(storeCtx, l.prefix+key, l.policy.lease(), l.policy.PerSecond, l.policy.burst(), now)
		cancel()
		if err != nil {
			if l.outage != nil {
				l.downUntil.Store(now.Add(l.outage.Failed(err)).UnixNano())
			}
			return Quota{}, err
		}
		if l.outage != nil {
			l.outage.Succeeded()
		}
		st.reserve, st.leasedAt, st.left, st.leftAt = taken, now, left, now
		if taken == 0 {
			st.emptyUntil = now.Add(l.policy.until(left, 1))
			return l.refused(st, now), nil
		}
	}
	st.reserve--
	return l.quota(st, now), nil
}

// quota reports an admitted request's budget: what the store had at the
// last lease, refilled since, plus what this replica holds.
func (l *Limiter) quota(st *keyState, now time.Time) Quota {
	tokens := l.policy.refill(st.left, now.Sub(st.leftAt)) + float64(st.reserve)
	tokens = min(tokens, float64(l.policy.burst()))
	return Quota{Policy: l.policy, Remaining: int(tokens), Reset: l.policy.until(tokens, float64(l.policy.burst()))}
}

func (l *Limiter) refused(st *keyState, now time.Time) Quota {
	wait := max(st.emptyUntil.Sub(now), time.Second)
	return Quota{Policy: l.policy, Remaining: 0, Reset: l.policy.until(0, float64(l.policy.burst())), RetryAfter: wait}
}

// Attempt admits an attempt that may fail, such as an authentication:
// only failures spend tokens. It returns the quota and done, which the
// caller must call with whether the attempt failed.
//
// A key with no recent failure on this replica is admitted without a
// look at the store (the usual case costs nothing); once it fails, its
// attempts each hold a token while they run and give it back when they
// succeed, so replicas together never let through more failing attempts
// than the budget, plus at most one per replica when a key first fails
// there after its budget ran out elsewhere.
func (l *Limiter) Attempt(ctx context.Context, key string) (Quota, func(failed bool)) {
	if l == nil || !l.policy.Enabled() {
		return Quota{Policy: l.policyOrZero()}, func(bool) {}
	}
	st := l.lock(key)
	now := l.now()
	st.lastUsed = now
	if now.Before(st.emptyUntil) {
		defer st.mu.Unlock()
		return l.refused(st, now), func(bool) {}
	}
	held := false
	if now.Before(st.suspectUntil) {
		q, err := l.takeLocked(ctx, key, st)
		if err != nil {
			st.mu.Unlock()
			return l.fallback.Attempt(ctx, key)
		}
		if !q.Admitted() {
			st.mu.Unlock()
			return q, func(bool) {}
		}
		held = true
	}
	q := l.quota(st, now)
	st.mu.Unlock()
	return q, func(failed bool) {
		st := l.lock(key)
		defer st.mu.Unlock()
		switch {
		case failed && !held:
			// The key's first failure here: spend a token now.
			if _, err := l.takeLocked(ctx, key, st); err != nil {
				_, done := l.fallback.Attempt(ctx, key)
				done(true)
			}
		case !failed && held:
			// Back to this replica's reserve, for the key's next attempt.
			st.reserve++
		}
		if failed {
			st.suspectUntil = l.now().Add(l.policy.Window())
		}
	}
}

// state returns key's state. Every LeaseTTL it starts a sweep, on its own
// goroutine so that no request waits for the tokens it gives back.
func (l *Limiter) state(key string) *keyState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); now.Sub(l.swept) >= LeaseTTL && l.sweeping.CompareAndSwap(false, true) {
		l.swept = now
		go func() {
			defer l.sweeping.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l.Sweep(ctx)
		}()
	}
	st, ok := l.keys[key]
	if !ok {
		st = &keyState{}
		l.keys[key] = st
	}
	return st
}

// lock returns key's state locked. A sweep may forget a state between
// state and the lock; its holder then takes the key's new state, so
// that no lease is ever spent from a state the limiter forgot.
func (l *Limiter) lock(key string) *keyState {
	for {
		st := l.state(key)
		st.mu.Lock()
		if !st.forgotten {
			return st
		}
		st.mu.Unlock()
	}
}

// Sweep gives back the tokens leased longer than LeaseTTL ago, forgets
// keys idle for longer than the policy's window and, every minute, prunes
// the store's buckets that refilled. The limiter starts one every LeaseTTL
// while it is used; tests call it.
func (l *Limiter) Sweep(ctx context.Context) {
	if l == nil {
		return
	}
	now := l.now()
	type unspent struct {
		key string
		n   int
	}
	var back []unspent
	l.mu.Lock()
	for key, st := range l.keys {
		if !st.mu.TryLock() {
			continue // in use: not idle
		}
		if st.reserve > 0 && now.Sub(st.leasedAt) > LeaseTTL {
			back = append(back, unspent{key, st.reserve})
			st.reserve = 0
		}
		if st.reserve == 0 && now.Sub(st.lastUsed) > l.policy.Window() && now.After(st.suspectUntil) {
			delete(l.keys, key)
			st.forgotten = true
		}
		st.mu.Unlock()
	}
	prune := now.Sub(l.pruned) >= pruneInterval
	if prune {
		l.pruned = now
	}
	l.mu.Unlock()
	for _, u := range back {
		// A token not given back is lost for the rest of its window,
		// never spent twice: the error is not worth more than a log line.
		if err := l.buckets.ReturnTokens(ctx, l.prefix+u.key, u.n, l.policy.PerSecond, l.policy.burst(), now); err != nil && l.outage != nil {
			l.outage.Failed(err)
		}
	}
	// Buckets untouched for a window are full, as absent ones are.
	if prune {
		if _, err := l.buckets.PruneBuckets(ctx, now.Add(-max(l.policy.Window(), pruneInterval))); err != nil && l.outage != nil {
			l.outage.Failed(err)
		}
	}
	l.fallback.Sweep(ctx)
}

// pruneInterval is how often a limiter deletes the buckets that refilled.
const pruneInterval = time.Minute

// AddressKey is the key a client address counts as for per-address
// limits: an IPv4 address (or one mapped into IPv6) alone, an IPv6
// address with every address of its prefix (ipv6Prefix bits, 64 when 0),
// since one host commonly holds a whole /64 and could otherwise take a
// fresh budget with each of its addresses. What is not an IP address
// counts as itself.
func AddressKey(addr string, ipv6Prefix int) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	bits := ipv6Prefix
	if bits <= 0 {
		bits = 64
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return ip.String()
	}
	return p.String()
}

// PerAddress applies a limiter to client addresses, each counted as
// AddressKey keys it.
type PerAddress struct {
	Limiter    *Limiter
	IPv6Prefix int
}

// Attempt is Limiter.Attempt for the client at addr.
func (a PerAddress) Attempt(ctx context.Context, addr string) (Quota, func(failed bool)) {
	return a.Limiter.Attempt(ctx, AddressKey(addr, a.IPv6Prefix))
}
