package mcpsessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// oneSession is a store of one session; the methods the tests do not
// reach are left to the embedded nil interface.
type oneSession struct {
	mcpsessions.Store
	s        mcpsessions.Session
	inserted *mcpsessions.Session
	full     bool
}

func (o *oneSession) Session(_ context.Context, hash []byte) (mcpsessions.Session, error) {
	if string(hash) != string(o.s.IDHash) {
		return mcpsessions.Session{}, failure.NotFound("MCP session")
	}
	return o.s, nil
}

func (o *oneSession) InsertSession(_ context.Context, s mcpsessions.Session, _ int) (bool, error) {
	if o.full {
		return false, nil
	}
	o.inserted = &s
	return true, nil
}

// hashKeys hashes by prefixing the purpose, which is enough to tell ids
// apart.
type hashKeys struct{}

func (hashKeys) Hash(purpose, value string) []byte { return []byte(purpose + ":" + value) }

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// A session id finds its session only for its own account, while it
// lives; another account's, an expired session's, a malformed or an
// unknown id are all the same NotFound.
func TestFindAnswersOnlyTheSessionsAccount(t *testing.T) {
	t.Parallel()
	store := &oneSession{}
	svc := mcpsessions.NewService(store, hashKeys{}, mcpsessions.Options{Now: func() time.Time { return now }})
	id, opened, err := svc.Open(t.Context(), "acc_a")
	require.NoError(t, err)
	require.Len(t, id, 43, "256 bits of base64url")
	require.Equal(t, svc.Hash(id), store.inserted.IDHash, "only the hash is stored")
	require.False(t, opened.Initialized())
	require.Equal(t, now.Add(mcpsessions.DefaultInitTimeout), opened.ExpiresAt, "uninitialized, it holds its place a minute")
	store.s = *store.inserted

	got, err := svc.Find(t.Context(), id, "acc_a")
	require.NoError(t, err)
	require.Equal(t, "acc_a", got.AccountID)
	for name, tc := range map[string]struct{ id, account string }{
		"another account": {id, "acc_b"},
		"malformed":       {id + "x", "acc_a"},
		"unknown":         {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "acc_a"},
	} {
		_, err := svc.Find(t.Context(), tc.id, tc.account)
		require.True(t, failure.Is(err, failure.KindNotFound), "%s: %v", name, err)
	}
	later := mcpsessions.NewService(store, hashKeys{}, mcpsessions.Options{Now: func() time.Time { return now.Add(time.Minute) }})
	_, err = later.Find(t.Context(), id, "acc_a")
	require.True(t, failure.Is(err, failure.KindNotFound), "an expired session: %v", err)

	store.full = true
	_, _, err = svc.Open(t.Context(), "acc_a")
	require.Equal(t, "too_many_sessions", failure.As(err).Code)
	require.Equal(t, failure.KindRateLimited, failure.As(err).Kind)
}
