package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
)

// clock is a settable clock shared by the replicas of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countingBuckets counts the calls that reach a store, and fails them
// while broken is set.
type countingBuckets struct {
	*ratelimit.MemoryBuckets
	mu              sync.Mutex
	takes, returned int
	broken          bool
}

func (c *countingBuckets) TakeTokens(ctx context.Context, key string, want int, perSecond float64, burst int, now time.Time) (int, float64, error) {
	c.mu.Lock()
	c.takes++
	broken := c.broken
	c.mu.Unlock()
	if broken {
		return 0, 0, errors.New("database away")
	}
	return c.MemoryBuckets.TakeTokens(ctx, key, want, perSecond, burst, now)
}

func (c *countingBuckets) ReturnTokens(ctx context.Context, key string, n int, perSecond float64, burst int, now time.Time) error {
	c.mu.Lock()
	c.returned += n
	c.mu.Unlock()
	return c.MemoryBuckets.ReturnTokens(ctx, key, n, perSecond, burst, now)
}

func replicas(n int, p ratelimit.Policy, b ratelimit.Buckets, c *clock) []*ratelimit.Limiter {
	out := make([]*ratelimit.Limiter, n)
	for i := range out {
		out[i] = ratelimit.New(p, b, ratelimit.Options{Prefix: "acct:", Now: c.now})
	}
	return out
}

var start = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestReplicasTogetherAdmitOneBudget(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{Name: "account", PerSecond: 200, Burst: 100} // leases of 10
	c := &clock{t: start}
	store := &countingBuckets{MemoryBuckets: ratelimit.NewMemoryBuckets()}
	ls := replicas(3, p, store, c)
	admitted, refusedInARow := 0, 0
	for i := 0; refusedInARow < 3; i++ {
		q := ls[i%3].Take(ctx, "acc_1")
		if q.Admitted() {
			admitted++
			refusedInARow = 0
			require.LessOrEqual(t, q.Remaining, p.Burst)
		} else {
			refusedInARow++
			require.GreaterOrEqual(t, q.RetryAfter, time.Second)
		}
	}
	require.Equal(t, p.Burst, admitted, "three replicas admit the one burst, no more, no less")
	require.LessOrEqual(t, store.takes, 3+p.Burst/10+3, "tokens are leased ten at a time, not one request at a time")

	// Half a second refills 100 tokens; each replica leases and admits.
	c.add(500 * time.Millisecond)
	for _, l := range ls {
		require.True(t, l.Take(ctx, "acc_1").Admitted())
	}
	require.True(t, ls[0].Take(ctx, "acc_2").Admitted(), "keys have their own buckets")
}

func TestUnspentLeasesGoBack(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{Name: "account", PerSecond: 200, Burst: 100}
	c := &clock{t: start}
	store := &countingBuckets{MemoryBuckets: ratelimit.NewMemoryBuckets()}
	ls := replicas(2, p, store, c)
	require.True(t, ls[0].Take(ctx, "k").Admitted())
	ls[0].Sweep(ctx)
	require.Zero(t, store.returned, "a fresh lease is kept")
	c.add(ratelimit.LeaseTTL + time.Millisecond)
	ls[0].Sweep(ctx)
	require.Equal(t, 9, store.returned, "the nine tokens not spent go back")
}

func TestRefusalsWaitWithoutTheStore(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{Name: "account", PerSecond: 1, Burst: 2}
	c := &clock{t: start}
	store := &countingBuckets{MemoryBuckets: ratelimit.NewMemoryBuckets()}
	l := replicas(1, p, store, c)[0]
	require.True(t, l.Take(ctx, "k").Admitted())
	require.True(t, l.Take(ctx, "k").Admitted())
	q := l.Take(ctx, "k")
	require.False(t, q.Admitted())
	takes := store.takes
	for range 50 {
		require.False(t, l.Take(ctx, "k").Admitted())
	}
	require.Equal(t, takes, store.takes, "an empty bucket is not asked again before it refills")
	c.add(time.Second)
	require.True(t, l.Take(ctx, "k").Admitted(), "one token a second")
	require.False(t, l.Take(ctx, "k").Admitted())
}

func TestFailedAttemptsShareOneBudgetAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{Name: "auth-failures", PerSecond: 0.5, Burst: 30}
	c := &clock{t: start}
	store := &countingBuckets{MemoryBuckets: ratelimit.NewMemoryBuckets()}
	ls := replicas(3, p, store, c)

	// Successes from a client cost the store nothing.
	for i := range 30 {
		q, done := ls[i%3].Attempt(ctx, "203.0.113.9")
		require.True(t, q.Admitted())
		done(false)
	}
	require.Zero(t, store.takes)

	checked := 0
	for i := range 300 {
		q, done := ls[i%3].Attempt(ctx, "203.0.113.7")
		if q.Admitted() {
			checked++
		}
		done(true)
	}
	require.LessOrEqual(t, checked, 30+2, "the budget, plus at most one per other replica")
	require.GreaterOrEqual(t, checked, 30)

	// A right secret from a suspect client still gets in, and its token
	// goes back.
	c.add(2 * time.Second)
	q, done := ls[0].Attempt(ctx, "203.0.113.7")
	require.True(t, q.Admitted())
	done(false)
	q, done = ls[0].Attempt(ctx, "203.0.113.7")
	require.True(t, q.Admitted(), "the token the success gave back")
	done(false)
}

func TestAnOutageFallsBackToLocalLimits(t *testing.T) {
	ctx := context.Background()
	p := ratelimit.Policy{Name: "account", PerSecond: 1, Burst: 3}
	c := &clock{t: start}
	store := &countingBuckets{MemoryBuckets: ratelimit.NewMemoryBuckets(), broken: true}
	l := replicas(1, p, store, c)[0]
	for range 3 {
		require.True(t, l.Take(ctx, "k").Admitted(), "requests go on while the database is away")
	}
	require.False(t, l.Take(ctx, "k").Admitted(), "under this process's own limit")
	require.Equal(t, 1, store.takes, "requests do not each wait for a store that failed")

	store.mu.Lock()
	store.broken = false
	store.mu.Unlock()
	c.add(5 * time.Second) // past the back-off
	require.True(t, l.Take(ctx, "other").Admitted())
	require.Equal(t, 2, store.takes, "the store is asked again once the back-off ends")
}

func TestDisabledAndNilLimitersAdmitEverything(t *testing.T) {
	var nilLimiter *ratelimit.Limiter
	require.True(t, nilLimiter.Take(context.Background(), "k").Admitted())
	l := ratelimit.New(ratelimit.Policy{}, ratelimit.NewMemoryBuckets(), ratelimit.Options{})
	for range 1000 {
		require.True(t, l.Take(context.Background(), "k").Admitted())
	}
}

func TestAddressKey(t *testing.T) {
	require.Equal(t, "192.0.2.1", ratelimit.AddressKey("::ffff:192.0.2.1", 64))
	require.Equal(t, "2001:db8:1:2::/64", ratelimit.AddressKey("2001:db8:1:2:aaaa::1", 0))
	require.Equal(t, "2001:db8::/48", ratelimit.AddressKey("2001:db8:0:ffff::1", 48))
	require.Equal(t, "not-an-ip", ratelimit.AddressKey("not-an-ip", 64))
}
