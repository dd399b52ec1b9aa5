package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// MCPSessions runs the contract of mcpsessions.Store against the stores
// that open returns; each call must give its own empty, migrated database.
func MCPSessions(t *testing.T, open func(t *testing.T) mcpsessions.Store) {
	ctx := context.Background()
	// newSession is a session of accountID, not yet inserted, live from at
	// for a minute.
	newSession := func(accountID string, seed byte) mcpsessions.Session {
		return mcpsessions.Session{
			IDHash: []byte{seed, 0, 0xff, 7}, AccountID: accountID,
			CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(time.Minute),
		}
	}
	read := func(t *testing.T, s mcpsessions.Store, hash []byte) mcpsessions.Session {
		t.Helper()
		got, err := s.Session(ctx, hash)
		require.NoError(t, err)
		return got
	}
	sorted := func(hashes [][]byte) [][]byte {
		slices.SortFunc(hashes, func(a, b []byte) int { return slices.Compare(a, b) })
		return hashes
	}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		sess := newSession("acc_a", 1)
		ok, err := s.InsertSession(ctx, sess, 10)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, sess, read(t, s, sess.IDHash))
		require.False(t, read(t, s, sess.IDHash).Initialized())

		_, err = s.Session(ctx, []byte{1, 0, 0xff})
		require.True(t, failure.Is(err, failure.KindNotFound), "a prefix of a hash finds nothing, got %v", err)
		_, err = s.InsertSession(ctx, sess, 10)
		require.True(t, failure.Is(err, failure.KindConflict), "a hash is unique, got %v", err)

		state := []byte(`{"initializeParams":{"protocolVersion":"2025-06-18"}}`)
		seen := at.Add(10 * time.Second)
		require.NoError(t, s.SetSessionState(ctx, sess.IDHash, state, seen, seen.Add(30*time.Minute)))
		got := read(t, s, sess.IDHash)
		require.Equal(t, state, got.State)
		require.True(t, got.Initialized())
		require.Equal(t, seen, got.LastSeenAt)
		require.Equal(t, seen.Add(30*time.Minute), got.ExpiresAt)
		err = s.SetSessionState(ctx, []byte{42}, state, seen, seen)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	})

	t.Run("TheCapCountsLiveSessionsOfTheAccount", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for i := range byte(2) {
			ok, err := s.InsertSession(ctx, newSession("acc_a", 10+i), 2)
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, err := s.InsertSession(ctx, newSession("acc_a", 20), 2)
		require.NoError(t, err)
		require.False(t, ok, "the account holds its cap")
		_, err = s.Session(ctx, newSession("acc_a", 20).IDHash)
		require.True(t, failure.Is(err, failure.KindNotFound), "a refused session is not stored, got %v", err)

		ok, err = s.InsertSession(ctx, newSession("acc_b", 21), 2)
		require.NoError(t, err)
		require.True(t, ok, "another account has places of its own")

		later := newSession("acc_a", 22)
		later.CreatedAt, later.LastSeenAt, later.ExpiresAt = at.Add(time.Minute), at.Add(time.Minute), at.Add(2*time.Minute)
		ok, err = s.InsertSession(ctx, later, 2)
		require.NoError(t, err)
		require.True(t, ok, "sessions expired at the new one's creation hold no place")

		require.NoError(t, s.DeleteSession(ctx, later.IDHash))
		require.NoError(t, s.DeleteSession(ctx, later.IDHash), "a missing session is no error")
	})

	t.Run("ConcurrentInsertsStayWithinTheCap", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const limit, attempts = 3, 20
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			inserted int
			errs     []error
		)
		for i := range byte(attempts) {
			wg.Go(func() {
				ok, err := s.InsertSession(ctx, newSession("acc_a", 100+i), limit)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					inserted++
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Equal(t, limit, inserted)
	})

	t.Run("TouchMovesForwardOnly", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		sess := newSession("acc_a", 3)
		_, err := s.InsertSession(ctx, sess, 10)
		require.NoError(t, err)
		seen := at.Add(30 * time.Second)
		require.NoError(t, s.TouchSession(ctx, sess.IDHash, seen, seen.Add(time.Hour)))
		got := read(t, s, sess.IDHash)
		require.Equal(t, seen, got.LastSeenAt)
		require.Equal(t, seen.Add(time.Hour), got.ExpiresAt)

		require.NoError(t, s.TouchSession(ctx, sess.IDHash, at.Add(time.Second), at.Add(time.Hour)))
		require.Equal(t, got, read(t, s, sess.IDHash), "an older touch changes nothing")

		late := got.ExpiresAt.Add(time.Second)
		require.NoError(t, s.TouchSession(ctx, sess.IDHash, late, late.Add(time.Hour)))
		require.Equal(t, got, read(t, s, sess.IDHash), "an expired session stays ended")
		require.NoError(t, s.TouchSession(ctx, []byte{99}, seen, seen), "a missing session is no error")
	})

	t.Run("LiveSessions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a, b, gone := newSession("acc_a", 4), newSession("acc_b", 5), newSession("acc_a", 6)
		b.ExpiresAt = at.Add(10 * time.Second)
		for _, sess := range []mcpsessions.Session{a, b, gone} {
			_, err := s.InsertSession(ctx, sess, 10)
			require.NoError(t, err)
		}
		require.NoError(t, s.DeleteSession(ctx, gone.IDHash))
		live, err := s.LiveSessions(ctx, [][]byte{a.IDHash, b.IDHash, gone.IDHash, {77}}, at.Add(5*time.Second))
		require.NoError(t, err)
		require.Equal(t, sorted([][]byte{a.IDHash, b.IDHash}), sorted(live))
		live, err = s.LiveSessions(ctx, [][]byte{a.IDHash, b.IDHash}, at.Add(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, [][]byte{a.IDHash}, live, "a session is over at its expiry")
		live, err = s.LiveSessions(ctx, nil, at)
		require.NoError(t, err)
		require.Empty(t, live)
	})

	t.Run("Subscriptions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a, b := newSession("acc_a", 7), newSession("acc_a", 8)
		for _, sess := range []mcpsessions.Session{a, b} {
			_, err := s.InsertSession(ctx, sess, 10)
			require.NoError(t, err)
		}
		const one, two = "switchboard://threads/thr_1", "switchboard://threads/thr_2"
		require.NoError(t, s.AddSubscription(ctx, a.IDHash, one))
		require.NoError(t, s.AddSubscription(ctx, a.IDHash, one), "again is no error")
		require.NoError(t, s.AddSubscription(ctx, b.IDHash, one))
		require.NoError(t, s.AddSubscription(ctx, b.IDHash, two))
		err := s.AddSubscription(ctx, []byte{55}, one)
		require.True(t, failure.Is(err, failure.KindNotFound), "a missing session subscribes to nothing, got %v", err)

		both := [][]byte{a.IDHash, b.IDHash}
		got, err := s.Subscribers(ctx, both, one)
		require.NoError(t, err)
		require.Equal(t, sorted(slices.Clone(both)), sorted(got))
		got, err = s.Subscribers(ctx, [][]byte{a.IDHash}, two)
		require.NoError(t, err)
		require.Empty(t, got, "only the sessions asked about")

		require.NoError(t, s.RemoveSubscription(ctx, a.IDHash, one))
		require.NoError(t, s.RemoveSubscription(ctx, a.IDHash, one), "a missing subscription is no error")
		got, err = s.Subscribers(ctx, both, one)
		require.NoError(t, err)
		require.Equal(t, [][]byte{b.IDHash}, got)

		require.NoError(t, s.DeleteSession(ctx, b.IDHash))
		got, err = s.Subscribers(ctx, both, two)
		require.NoError(t, err)
		require.Empty(t, got, "a deleted session's subscriptions go with it")
	})

	t.Run("Prune", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		old, fresh := newSession("acc_a", 9), newSession("acc_a", 10)
		fresh.ExpiresAt = at.Add(time.Hour)
		for _, sess := range []mcpsessions.Session{old, fresh} {
			_, err := s.InsertSession(ctx, sess, 10)
			require.NoError(t, err)
		}
		require.NoError(t, s.AddSubscription(ctx, old.IDHash, "switchboard://threads/thr_1"))
		n, err := s.PruneSessions(ctx, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = s.Session(ctx, old.IDHash)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		read(t, s, fresh.IDHash)
		n, err = s.PruneSessions(ctx, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
