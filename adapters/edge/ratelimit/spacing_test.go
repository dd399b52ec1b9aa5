package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
)

func TestSpacingAdmitsOneCallPerKeyAndWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	buckets := ratelimit.NewMemoryBuckets()
	// Two replicas over one store.
	a := &ratelimit.Spacing{Buckets: buckets, Now: c.now}
	b := &ratelimit.Spacing{Buckets: buckets, Now: c.now}
	const window = 5 * time.Second

	ok, _, err := a.Claim(ctx, "thr_1", window)
	require.NoError(t, err)
	require.True(t, ok)

	c.add(2 * time.Second)
	ok, wait, err := b.Claim(ctx, "thr_1", window)
	require.NoError(t, err)
	require.False(t, ok, "the other replica is inside the window")
	require.InDelta(t, 3*time.Second, wait, float64(10*time.Millisecond))

	ok, _, err = b.Claim(ctx, "thr_2", window)
	require.NoError(t, err)
	require.True(t, ok, "another key has its own window")

	c.add(3 * time.Second)
	ok, _, err = b.Claim(ctx, "thr_1", window)
	require.NoError(t, err)
	require.True(t, ok, "the window has passed")

	require.NoError(t, b.Release(ctx, "thr_1", window))
	ok, _, err = a.Claim(ctx, "thr_1", window)
	require.NoError(t, err)
	require.True(t, ok, "a released turn may be taken again at once")
}
