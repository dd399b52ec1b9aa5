package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
)

// IdempotencyStores are what the idempotency contract needs of one
// database: the key store, a use case's decision whose batch records
// answers in its transaction, and a committer whose batches record them
// (shared with concurrent callers' batches where it batches).
type IdempotencyStores struct {
	Keys idempotency.Store
	// Decide writes the batch decide returns in one transaction, or
	// nothing when decide fails.
	Decide    func(ctx context.Context, decide func(ctx context.Context) (writes.Batch, error)) error
	Committer writes.Committer
	// Prune deletes keys older than the window before now, with their
	// answers, and counts the keys.
	Prune func(ctx context.Context, now time.Time) (int64, error)
}

// Idempotency runs the contract of idempotency.Store and of the answers of
// writes.Batch against the stores that open returns; each call
// must give its own empty, migrated database.
func Idempotency(t *testing.T, open func(t *testing.T) IdempotencyStores) {
	ctx := context.Background()
	lock := 15 * time.Second
	answer := idempotency.Response{Status: 200, Body: []byte(`{"ok":true}` + "\n")}
	reserve := func(t *testing.T, s IdempotencyStores, account, key, fp string, now time.Time) idempotency.Reservation {
		t.Helper()
		res, err := s.Keys.ReserveKey(ctx, account, key, fp, now, lock)
		require.NoError(t, err)
		return res
	}
	answers := func(account string, keyed map[string]idempotency.Response) writes.Batch {
		var b writes.Batch
		for key, res := range keyed {
			b.Answers = append(b.Answers, writes.Answer{AccountID: account, Key: key, Response: res})
		}
		return b
	}
	record := func(s IdempotencyStores, account, key string, res idempotency.Response) error {
		return s.Committer.Commit(ctx, answers(account, map[string]idempotency.Response{key: res}))
	}

	t.Run("ReserveInFlightMismatchPerAccount", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		require.Equal(t, idempotency.New, reserve(t, s, "acc_a", "k1", "fp1", at).Outcome)
		res := reserve(t, s, "acc_a", "k1", "fp1", at.Add(time.Second))
		require.Equal(t, idempotency.InFlight, res.Outcome, "the first request still runs")
		require.True(t, res.LockedUntil.Equal(at.Add(lock)), "in flight until the claim lapses, got %v", res.LockedUntil)
		require.Equal(t, idempotency.Mismatch, reserve(t, s, "acc_a", "k1", "fp2", at.Add(time.Second)).Outcome)
		require.Equal(t, idempotency.New, reserve(t, s, "acc_b", "k1", "fp2", at).Outcome, "keys are per account")
		// A holder that died: its claim is taken over once it lapses.
		require.Equal(t, idempotency.New, reserve(t, s, "acc_a", "k1", "fp1", at.Add(lock+time.Second)).Outcome)
		require.Equal(t, idempotency.InFlight, reserve(t, s, "acc_a", "k1", "fp1", at.Add(lock+2*time.Second)).Outcome, "the new holder's claim")
	})

	t.Run("RecordedAnswerReplaysWithTheCommit", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "k1", "fp1", at)
		require.NoError(t, record(s, "acc_a", "k1", answer))
		require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: answer}, reserve(t, s, "acc_a", "k1", "fp1", at.Add(time.Hour)))
		require.Equal(t, idempotency.Mismatch, reserve(t, s, "acc_a", "k1", "fp2", at.Add(time.Hour)).Outcome)
		require.Equal(t, idempotency.Replay, reserve(t, s, "acc_a", "k1", "fp1", at.Add(idempotency.Window-time.Second)).Outcome)
		res := reserve(t, s, "acc_a", "k1", "fp3", at.Add(idempotency.Window+time.Second))
		require.Equal(t, idempotency.New, res.Outcome, "after 24 hours the key is free")
		require.Equal(t, idempotency.InFlight, reserve(t, s, "acc_a", "k1", "fp3", at.Add(idempotency.Window+2*time.Second)).Outcome,
			"its new life has no answer yet")
	})

	t.Run("RolledBackAnswerIsNotKept", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "k1", "fp1", at)
		failed := errors.New("the work failed")
		err := s.Decide(ctx, func(ctx context.Context) (writes.Batch, error) {
			return answers("acc_a", map[string]idempotency.Response{"k1": answer}), failed
		})
		require.ErrorIs(t, err, failed)
		require.Equal(t, idempotency.InFlight, reserve(t, s, "acc_a", "k1", "fp1", at.Add(time.Second)).Outcome)
		require.Equal(t, idempotency.New, reserve(t, s, "acc_a", "k1", "fp1", at.Add(lock+time.Second)).Outcome, "taken over: nothing committed")
	})

	t.Run("SecondAnswerFailsItsTransaction", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "k1", "fp1", at)
		reserve(t, s, "acc_a", "k2", "fp1", at)
		require.NoError(t, record(s, "acc_a", "k1", answer))
		// A second holder of k1 (the first one's claim lapsed) answers in
		// a transaction that also answers k2: all of it rolls back.
		err := s.Decide(ctx, func(ctx context.Context) (writes.Batch, error) {
			return answers("acc_a", map[string]idempotency.Response{"k2": answer, "k1": {Status: 200, Body: []byte("second")}}), nil
		})
		require.ErrorIs(t, err, idempotency.ErrAnsweredElsewhere)
		require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: answer}, reserve(t, s, "acc_a", "k1", "fp1", at.Add(time.Second)))
		require.Equal(t, idempotency.InFlight, reserve(t, s, "acc_a", "k2", "fp1", at.Add(time.Second)).Outcome, "k2's answer rolled back")
	})

	t.Run("SharedTransactionsAnswerEachUnitOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const n = 40
		for i := range n {
			reserve(t, s, "acc_a", fmt.Sprint("k", i), "fp", at)
		}
		require.NoError(t, record(s, "acc_a", "k7", answer))
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Committer.Commit(ctx, writes.Batch{Answers: []writes.Answer{
					{AccountID: "acc_a", Key: fmt.Sprint("k", i), Response: idempotency.Response{Status: 200 + i, Body: []byte(fmt.Sprint(i))}},
				}})
			}()
		}
		wg.Wait()
		for i := range n {
			res := reserve(t, s, "acc_a", fmt.Sprint("k", i), "fp", at.Add(time.Second))
			if i == 7 {
				require.ErrorIs(t, errs[i], idempotency.ErrAnsweredElsewhere, "k7 was answered")
				require.Equal(t, idempotency.Replay, res.Outcome)
				require.Equal(t, answer, res.Response, "the first answer stays")
				continue
			}
			require.NoError(t, errs[i], "unit %d: a failed unit does not fail the others", i)
			require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: idempotency.Response{Status: 200 + i, Body: []byte(fmt.Sprint(i))}}, res)
		}
	})

	t.Run("CompleteKeepsTheFirstAnswer", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "k1", "fp1", at)
		require.NoError(t, s.Keys.CompleteKey(ctx, "acc_a", "k1", answer))
		require.NoError(t, s.Keys.CompleteKey(ctx, "acc_a", "k1", idempotency.Response{Status: 201, Body: []byte("late")}))
		require.ErrorIs(t, record(s, "acc_a", "k1", idempotency.Response{Status: 202}), idempotency.ErrAnsweredElsewhere)
		require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: answer}, reserve(t, s, "acc_a", "k1", "fp1", at.Add(time.Second)))
	})

	t.Run("ReleaseFreesTheKeyButKeepsAnAnswer", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "k1", "fp1", at)
		require.NoError(t, s.Keys.ReleaseKey(ctx, "acc_a", "k1"))
		require.Equal(t, idempotency.New, reserve(t, s, "acc_a", "k1", "fp2", at.Add(time.Second)).Outcome, "a released key is free, for any request")
		require.Equal(t, idempotency.InFlight, reserve(t, s, "acc_a", "k1", "fp2", at.Add(2*time.Second)).Outcome)

		// The work's commit went through although its request saw an
		// error: releasing does not undo the answer.
		reserve(t, s, "acc_a", "k2", "fp1", at)
		require.NoError(t, record(s, "acc_a", "k2", answer))
		require.NoError(t, s.Keys.ReleaseKey(ctx, "acc_a", "k2"))
		require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: answer}, reserve(t, s, "acc_a", "k2", "fp1", at.Add(time.Second)))
	})

	t.Run("PruneDeletesOldKeysWithTheirAnswers", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		reserve(t, s, "acc_a", "old", "fp", at)
		require.NoError(t, record(s, "acc_a", "old", answer))
		reserve(t, s, "acc_a", "young", "fp", at.Add(time.Hour))
		require.NoError(t, record(s, "acc_a", "young", answer))
		n, err := s.Prune(ctx, at.Add(idempotency.Window+time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, idempotency.New, reserve(t, s, "acc_a", "old", "fp", at.Add(idempotency.Window+time.Minute)).Outcome, "pruned with its answer")
		require.Equal(t, idempotency.Replay, reserve(t, s, "acc_a", "young", "fp", at.Add(idempotency.Window+time.Minute)).Outcome)
	})

	t.Run("ConcurrentFirstUsesHaveOneWinner", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const n = 8
		outcomes := make([]idempotency.Outcome, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.Keys.ReserveKey(ctx, "acc_a", "k1", "fp", at, lock)
				outcomes[i], errs[i] = res.Outcome, err
			}()
		}
		wg.Wait()
		won := 0
		for i := range n {
			require.NoError(t, errs[i])
			if outcomes[i] == idempotency.New {
				won++
			} else {
				require.Equal(t, idempotency.InFlight, outcomes[i])
			}
		}
		require.Equal(t, 1, won)
	})
}
