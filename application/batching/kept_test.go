package batching

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// A kept value is served until its TTL, and in the last fifth of it one
// caller, and only one, starts reading it again in the background.
func TestKeptValuesAreRefreshedAheadOfExpiry(t *testing.T) {
	t.Parallel()
	var clock atomicTime
	clock.set(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	var loads atomic.Int32
	var answer atomic.Value
	answer.Store("v1")
	refreshed := make(chan struct{}, 10)
	k := NewKept(5*time.Second, 10, clock.get, func(ctx context.Context, key string) (string, error) {
		loads.Add(1)
		defer func() { refreshed <- struct{}{} }()
		v := answer.Load().(string)
		if v == "gone" {
			return "", failure.NotFound("value")
		}
		return v, nil
	})
	ctx := context.Background()
	v, err := k.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v1", v)
	<-refreshed

	answer.Store("v2")
	clock.add(3 * time.Second)
	v, err = k.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v1", v, "not yet due: served without a read")
	require.Equal(t, int32(1), loads.Load())

	clock.add(1500 * time.Millisecond)
	v, _ = k.Get(ctx, "k")
	require.Equal(t, "v1", v, "still served while it is read again")
	<-refreshed
	require.Eventually(t, func() bool { got, _ := k.Peek("k"); return got == "v2" }, 5*time.Second, time.Millisecond,
		"the background read starts a new TTL")
	require.Equal(t, int32(2), loads.Load(), "one refresh")

	clock.add(5 * time.Second)
	_, ok := k.Peek("k")
	require.False(t, ok, "never served past its TTL")

	answer.Store("gone")
	_, err = k.Get(ctx, "k")
	require.True(t, failure.Is(err, failure.KindNotFound))
	<-refreshed
	_, ok = k.Peek("k")
	require.False(t, ok, "a key found gone is not kept")

	k.Record("k", "v3", nil)
	k.Record("k", "", errors.New("a failed read"))
	got, ok := k.Peek("k")
	require.True(t, ok && got == "v3", "a failure other than not found keeps the value")
	k.Record("k", "", failure.NotFound("value"))
	_, ok = k.Peek("k")
	require.False(t, ok, "a value found gone is dropped")
}

// atomicTime is a settable clock.
type atomicTime struct{ ns atomic.Int64 }

func (a *atomicTime) set(t time.Time)     { a.ns.Store(t.UnixNano()) }
func (a *atomicTime) add(d time.Duration) { a.ns.Add(int64(d)) }
func (a *atomicTime) get() time.Time      { return time.Unix(0, a.ns.Load()).UTC() }

func TestSettledKeepsUpToItsBound(t *testing.T) {
	t.Parallel()
	s := NewSettled[string, int](2)
	_, ok := s.Get("a")
	require.False(t, ok)
	s.Keep("a", 1)
	s.Keep("b", 2)
	s.Keep("c", 3)
	for key, want := range map[string]int{"a": 1, "b": 2} {
		got, ok := s.Get(key)
		require.True(t, ok && got == want, "%s", key)
	}
	_, ok = s.Get("c")
	require.False(t, ok, "past the bound nothing more is kept")
}
