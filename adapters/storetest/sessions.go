package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// SessionsFixture is a sessions store and the accounts store of the same
// database, for the credentials sessions belong to.
type SessionsFixture struct {
	Store    sessions.Store
	Accounts accounts.Store
}

// Sessions runs the contract of sessions.Store against the stores that
// open returns; each call must give its own empty, migrated database.
func Sessions(t *testing.T, open func(t *testing.T) SessionsFixture) {
	ctx := context.Background()
	// newSession stores an account and a credential and returns a session
	// of them, not yet inserted, live from at for an hour.
	newSession := func(t *testing.T, f SessionsFixture, seed byte) sessions.Session {
		t.Helper()
		a := newAccount("A")
		require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, a))
		c := newCredential(a.ID, seed)
		require.NoError(t, f.Accounts.Repos().InsertCredential(ctx, c))
		return sessions.Session{
			TokenHash: []byte{seed, 0, 0xff, 7}, AccountID: a.ID, CredentialID: c.ID,
			CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Hour),
		}
	}
	read := func(t *testing.T, f SessionsFixture, hash []byte) sessions.Session {
		t.Helper()
		s, err := f.Store.Session(ctx, hash)
		require.NoError(t, err)
		return s
	}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		s := newSession(t, f, 1)
		require.NoError(t, f.Store.InsertSession(ctx, s))
		require.Equal(t, s, read(t, f, s.TokenHash))

		_, err := f.Store.Session(ctx, []byte{1, 0, 0xff})
		require.True(t, failure.Is(err, failure.KindNotFound), "a prefix of a hash finds nothing, got %v", err)
		err = f.Store.InsertSession(ctx, s)
		require.True(t, failure.Is(err, failure.KindConflict), "a token hash is unique, got %v", err)

		orphan := s
		orphan.TokenHash, orphan.CredentialID = []byte{9}, "key_missing"
		require.Error(t, f.Store.InsertSession(ctx, orphan), "a session's credential must exist")
	})

	t.Run("TouchMovesForwardOnly", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		s := newSession(t, f, 2)
		require.NoError(t, f.Store.InsertSession(ctx, s))

		seen := at.Add(10 * time.Minute)
		require.NoError(t, f.Store.TouchSession(ctx, s.TokenHash, seen, seen.Add(time.Hour)))
		got := read(t, f, s.TokenHash)
		require.Equal(t, seen, got.LastSeenAt)
		require.Equal(t, seen.Add(time.Hour), got.ExpiresAt)
		require.Equal(t, at, got.CreatedAt, "a touch keeps the creation time")

		require.NoError(t, f.Store.TouchSession(ctx, s.TokenHash, at.Add(time.Minute), at.Add(time.Minute+time.Hour)))
		require.Equal(t, got, read(t, f, s.TokenHash), "an older touch changes nothing")

		late := got.ExpiresAt
		require.NoError(t, f.Store.TouchSession(ctx, s.TokenHash, late, late.Add(time.Hour)))
		require.Equal(t, got, read(t, f, s.TokenHash), "a session expired at the touch stays expired")

		require.NoError(t, f.Store.TouchSession(ctx, []byte{42}, seen, seen), "touching a missing session is no error")
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		s, other := newSession(t, f, 3), newSession(t, f, 4)
		require.NoError(t, f.Store.InsertSession(ctx, s))
		require.NoError(t, f.Store.InsertSession(ctx, other))
		require.NoError(t, f.Store.DeleteSession(ctx, s.TokenHash))
		_, err := f.Store.Session(ctx, s.TokenHash)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		require.NoError(t, f.Store.DeleteSession(ctx, s.TokenHash), "deleting twice is no error")
		require.Equal(t, other, read(t, f, other.TokenHash), "other sessions stay")
	})

	t.Run("PruneDeletesExpiredOnly", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		expired, due, live := newSession(t, f, 5), newSession(t, f, 6), newSession(t, f, 7)
		expired.ExpiresAt = at.Add(time.Minute)
		due.ExpiresAt = at.Add(2 * time.Minute)
		live.ExpiresAt = at.Add(2*time.Minute + time.Microsecond)
		for _, s := range []sessions.Session{expired, due, live} {
			require.NoError(t, f.Store.InsertSession(ctx, s))
		}
		n, err := f.Store.PruneSessions(ctx, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 2, n, "sessions expiring at or before now are pruned")
		for _, s := range []sessions.Session{expired, due} {
			_, err := f.Store.Session(ctx, s.TokenHash)
			require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		}
		require.Equal(t, live, read(t, f, live.TokenHash))
		n, err = f.Store.PruneSessions(ctx, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n)
	})

	// Replicas touch one session at once: the latest use wins, whatever
	// order the writes land in.
	t.Run("ConcurrentTouchesKeepTheLatest", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		s := newSession(t, f, 8)
		require.NoError(t, f.Store.InsertSession(ctx, s))
		const touches = 16
		var wg sync.WaitGroup
		errs := make(chan error, touches)
		for i := range touches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				seen := at.Add(time.Duration(i+1) * time.Second)
				errs <- f.Store.TouchSession(ctx, s.TokenHash, seen, seen.Add(time.Hour))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got := read(t, f, s.TokenHash)
		require.Equal(t, at.Add(touches*time.Second), got.LastSeenAt)
		require.Equal(t, at.Add(touches*time.Second+time.Hour), got.ExpiresAt)
	})
}
