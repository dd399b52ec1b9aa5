package batching

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitFor waits until n callers wait for key's running call.
func waitFor[K comparable, V any](t *testing.T, f *Flight[K, V], key K, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.calls[key]
		return ok && c.waiting == n
	}, 5*time.Second, time.Millisecond)
}

func TestFlightSharesOneCallPerKey(t *testing.T) {
	t.Parallel()
	var f Flight[string, int]
	var calls atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	ctx := context.Background()
	results := make([]int, 10)
	var wg sync.WaitGroup
	wg.Go(func() {
		results[0], _ = f.Do(ctx, "a", func() (int, error) {
			calls.Add(1)
			close(started)
			<-release
			return 42, nil
		})
	})
	<-started
	for i := 1; i < 10; i++ {
		wg.Go(func() {
			results[i], _ = f.Do(ctx, "a", func() (int, error) { calls.Add(1); return -1, nil })
		})
	}
	waitFor(t, &f, "a", 9)
	other, err := f.Do(ctx, "b", func() (int, error) { return 7, nil })
	require.NoError(t, err)
	require.Equal(t, 7, other, "another key runs its own call")
	close(release)
	wg.Wait()
	require.Equal(t, int32(1), calls.Load())
	for i, r := range results {
		require.Equal(t, 42, r, "caller %d", i)
	}
	again, err := f.Do(ctx, "a", func() (int, error) { return 43, nil })
	require.NoError(t, err)
	require.Equal(t, 43, again, "a finished call is not kept")
}

func TestFlightWaiterOutlivesTheCallerThatWentAway(t *testing.T) {
	t.Parallel()
	var f Flight[string, int]
	leader, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var leaderErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, leaderErr = f.Do(leader, "k", func() (int, error) {
			close(started)
			<-leader.Done()
			return 0, leader.Err()
		})
	})
	<-started
	var got int
	var err error
	wg.Go(func() {
		got, err = f.Do(context.Background(), "k", func() (int, error) { return 5, nil })
	})
	waitFor(t, &f, "k", 1)
	cancel()
	wg.Wait()
	require.ErrorIs(t, leaderErr, context.Canceled)
	require.NoError(t, err, "the waiter ran the call again")
	require.Equal(t, 5, got)
}

func TestFlightPanicReachesWaitersAsAnError(t *testing.T) {
	t.Parallel()
	var f Flight[string, int]
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() { require.Equal(t, "boom", recover()) }()
		_, _ = f.Do(context.Background(), "p", func() (int, error) {
			close(started)
			<-release
			panic("boom")
		})
	})
	<-started
	var err error
	wg.Go(func() { _, err = f.Do(context.Background(), "p", func() (int, error) { return 0, nil }) })
	waitFor(t, &f, "p", 1)
	close(release)
	wg.Wait()
	require.True(t, errors.Is(err, errFlightPanicked), "got %v", err)
}
