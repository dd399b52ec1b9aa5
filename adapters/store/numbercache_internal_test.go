package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// A kept number is served until its TTL, and in the last fifth of it one
// caller, and only one, is told to read it again in the background.
func TestKeptNumbersAreRefreshedAheadOfExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := &numberCache{ttl: 5 * time.Second, now: func() time.Time { return now }}
	c.put("k", account.Number{ID: "num_1"})

	now = now.Add(3 * time.Second)
	n, ok, refresh := c.get("k")
	require.True(t, ok)
	require.False(t, refresh, "not yet due")
	require.Equal(t, "num_1", n.ID)

	now = now.Add(1500 * time.Millisecond)
	_, ok, refresh = c.get("k")
	require.True(t, ok, "still served while it is read again")
	require.True(t, refresh, "the first caller in the window refreshes")
	_, ok, refresh = c.get("k")
	require.True(t, ok)
	require.False(t, refresh, "one refresh at a time")

	c.put("k", account.Number{ID: "num_1", Enabled: true})
	n, ok, refresh = c.get("k")
	require.True(t, ok && n.Enabled && !refresh, "the refreshed number starts a new TTL")

	now = now.Add(5 * time.Second)
	_, ok, _ = c.get("k")
	require.False(t, ok, "never served past its TTL")

	c.put("k", account.Number{ID: "num_1"})
	c.drop("k")
	_, ok, _ = c.get("k")
	require.False(t, ok, "a number found gone is dropped")
}
