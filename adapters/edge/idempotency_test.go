package edge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// keyStore is an idempotency.Store whose reservation is fixed and which
// records what the protocol did with the key.
type keyStore struct {
	reservation idempotency.Reservation
	reserved    []string // fingerprints
	completed   []idempotency.Response
	released    int
}

func (s *keyStore) ReserveKey(_ context.Context, _, _, fingerprint string, _ time.Time, _ time.Duration) (idempotency.Reservation, error) {
	s.reserved = append(s.reserved, fingerprint)
	return s.reservation, nil
}

func (s *keyStore) CompleteKey(_ context.Context, _, _ string, res idempotency.Response) error {
	s.completed = append(s.completed, res)
	return nil
}

func (s *keyStore) ReleaseKey(context.Context, string, string) error {
	s.released++
	return nil
}

func TestIdempotencyProtocol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	begin := func(r idempotency.Reservation, key string) (*keyStore, *edge.Held, *idempotency.Response, error) {
		s := &keyStore{reservation: r}
		held, replay, err := edge.NewIdempotency(s, 0, func() time.Time { return now }, nil).Begin(ctx, edge.HeaderWords, "acct", key, "fp")
		return s, held, replay, err
	}

	t.Run("WithoutAKeyNothingHappens", func(t *testing.T) {
		t.Parallel()
		s, held, replay, err := begin(idempotency.Reservation{}, "")
		require.NoError(t, err)
		require.Nil(t, held)
		require.Nil(t, replay)
		require.Empty(t, s.reserved)
		held.Finish(ctx, edge.Answered, idempotency.Response{Status: 200}) // a nil Held keeps nothing
		require.Nil(t, edge.AnswerWith(held, func(int) idempotency.Response { return idempotency.Response{} }))
	})

	t.Run("ALongKeyIsInvalid", func(t *testing.T) {
		t.Parallel()
		long := make([]byte, edge.MaxIdempotencyKey+1)
		for i := range long {
			long[i] = 'k'
		}
		s, _, _, err := begin(idempotency.Reservation{}, string(long))
		require.Equal(t, failure.KindInvalid, failure.As(err).Kind)
		require.Equal(t, []any{"Idempotency-Key"}, failure.As(err).Fields[0].Path)
		require.Empty(t, s.reserved, "refused before the store")
	})

	t.Run("AReplayAnswersTheStoredResponse", func(t *testing.T) {
		t.Parallel()
		stored := idempotency.Response{Status: 201, Body: []byte(`{"id":"m1"}`)}
		_, held, replay, err := begin(idempotency.Reservation{Outcome: idempotency.Replay, Response: stored}, "k")
		require.NoError(t, err)
		require.Nil(t, held)
		require.Equal(t, stored, *replay)
	})

	t.Run("RefusalsAreConflicts", func(t *testing.T) {
		t.Parallel()
		_, _, _, err := begin(idempotency.Reservation{Outcome: idempotency.Mismatch}, "k")
		require.Equal(t, "idempotency_key_reused", failure.As(err).Code)
		require.Equal(t, "this Idempotency-Key was used with a different request", failure.As(err).Message)
		_, _, _, err = begin(idempotency.Reservation{Outcome: idempotency.InFlight, LockedUntil: now.Add(100 * time.Millisecond)}, "k")
		require.Equal(t, "idempotency_key_in_use", failure.As(err).Code)
		require.Equal(t, time.Second, failure.As(err).RetryAfter, "at least a second")
	})

	t.Run("FinishKeepsReleasesOrLeavesTheAnswer", func(t *testing.T) {
		t.Parallel()
		s, held, _, err := begin(idempotency.Reservation{Outcome: idempotency.New}, "k")
		require.NoError(t, err)
		require.Equal(t, []string{"fp"}, s.reserved)
		completion := edge.AnswerWith(held, func(v int) idempotency.Response { return idempotency.Response{Status: v} })
		require.Equal(t, "acct", completion.AccountID)
		require.Equal(t, "k", completion.Key)

		held.Finish(ctx, edge.AnsweredWithWork, idempotency.Response{})
		require.Empty(t, s.completed)
		require.Zero(t, s.released)
		held.Finish(ctx, edge.Answered, idempotency.Response{Status: 400, Body: []byte("no")})
		require.Equal(t, []idempotency.Response{{Status: 400, Body: []byte("no")}}, s.completed)
		held.Finish(ctx, edge.ServerFailed, idempotency.Response{})
		require.Equal(t, 1, s.released)
	})
}
