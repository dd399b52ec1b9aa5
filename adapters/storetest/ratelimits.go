package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Buckets is the rate limiter's token-bucket store (the edge's
// ratelimit.Buckets): a bucket that does not exist is full.
type Buckets interface {
	TakeTokens(ctx context.Context, key string, want int, perSecond float64, burst int, now time.Time) (taken int, left float64, err error)
	ReturnTokens(ctx context.Context, key string, n int, perSecond float64, burst int, now time.Time) error
	PruneBuckets(ctx context.Context, before time.Time) (int, error)
}

// RateBuckets runs the contract of Buckets against the store that open
// returns; each call must give its own empty store.
func RateBuckets(t *testing.T, open func(t *testing.T) Buckets) {
	ctx := context.Background()
	const perSecond, burst = 2, 5
	take := func(t *testing.T, b Buckets, key string, want int, now time.Time) (int, float64) {
		t.Helper()
		taken, left, err := b.TakeTokens(ctx, key, want, perSecond, burst, now)
		require.NoError(t, err)
		return taken, left
	}

	t.Run("NewBucketsAreFullAndTakesAreCapped", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		taken, left := take(t, b, "k", 3, at)
		require.Equal(t, 3, taken)
		require.InDelta(t, 2, left, 1e-9)
		taken, left = take(t, b, "k", 3, at)
		require.Equal(t, 2, taken, "only what is left")
		require.InDelta(t, 0, left, 1e-9)
		taken, _ = take(t, b, "k", 1, at)
		require.Zero(t, taken, "an empty bucket gives nothing")
		taken, _ = take(t, b, "other", 9, at)
		require.Equal(t, 5, taken, "keys are apart; no take above the burst")
	})

	t.Run("RefillAtTheRateUpToTheBurst", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		take(t, b, "k", 5, at)
		taken, left := take(t, b, "k", 5, at.Add(1250*time.Millisecond))
		require.Equal(t, 2, taken, "2.5 tokens refilled in 1.25 s: two whole ones")
		require.InDelta(t, 0.5, left, 1e-6, "the fraction stays")
		taken, _ = take(t, b, "k", 9, at.Add(time.Hour))
		require.Equal(t, 5, taken, "a bucket holds no more than its burst")
		taken, _ = take(t, b, "k", 1, at.Add(time.Hour-time.Minute))
		require.Zero(t, taken, "a clock behind the last take refills nothing")
	})

	t.Run("ReturnedTokensCanBeTakenAgain", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		take(t, b, "k", 5, at)
		require.NoError(t, b.ReturnTokens(ctx, "k", 2, perSecond, burst, at))
		taken, _ := take(t, b, "k", 5, at)
		require.Equal(t, 2, taken)
		require.NoError(t, b.ReturnTokens(ctx, "k", 9, perSecond, burst, at))
		taken, _ = take(t, b, "k", 9, at)
		require.Equal(t, 5, taken, "returns never fill above the burst")
		require.NoError(t, b.ReturnTokens(ctx, "absent", 3, perSecond, burst, at), "a bucket that is gone is full already")
		taken, _ = take(t, b, "absent", 9, at)
		require.Equal(t, 5, taken)
	})

	t.Run("PruneForgetsIdleBuckets", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		take(t, b, "old", 5, at)
		take(t, b, "fresh", 5, at.Add(time.Minute))
		n, err := b.PruneBuckets(ctx, at.Add(30*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		taken, _ := take(t, b, "fresh", 5, at.Add(time.Minute))
		require.Zero(t, taken, "the fresh bucket is kept, empty")
		taken, _ = take(t, b, "old", 5, at.Add(time.Minute))
		require.Equal(t, 5, taken, "a pruned bucket is full")
	})

	t.Run("ConcurrentTakesNeverOverspend", func(t *testing.T) {
		t.Parallel()
		b := open(t)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total int
		)
		for range 12 {
			wg.Go(func() {
				taken, _, err := b.TakeTokens(ctx, "k", 1, perSecond, burst, at)
				require.NoError(t, err)
				mu.Lock()
				total += taken
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Equal(t, 5, total, "12 takers share the burst of 5")
	})
}
