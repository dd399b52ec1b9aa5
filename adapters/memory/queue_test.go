package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/memory"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

var (
	_ storetest.JobQueue = (*memory.Queue)(nil)
	_ runner.Queue       = (*memory.Queue)(nil)
	_ runner.Wakeups     = (*memory.Queue)(nil)
	_ runner.StatsSource = (*memory.Queue)(nil)
)

func TestJobsContract(t *testing.T) {
	t.Parallel()
	storetest.Jobs(t, func(t *testing.T) storetest.JobQueue { return memory.NewQueue(nil) })
}

// What the lease contract does not reach: unique keys, batches, retries,
// snoozes, deaths, cancels, pruning, stats and wake-ups.
func TestQueueBeyondTheContract(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	lease := []jobs.Lease{{Kind: "k", Until: now.Add(time.Minute)}}

	t.Run("UniqueKeysHoldWhilePendingOrRunning", func(t *testing.T) {
		t.Parallel()
		q := memory.NewQueue(clock)
		ctx := context.Background()
		id, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "u"})
		require.NoError(t, err)
		again, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "u"})
		require.NoError(t, err)
		require.Equal(t, id, again)
		claimed, err := q.ClaimJobs(ctx, "w", lease, 10, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		again, err = q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "u"})
		require.NoError(t, err)
		require.Equal(t, id, again, "a running job holds its key")
		require.NoError(t, q.CompleteJobs(ctx, "w", []int64{id}, now))
		fresh, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "u"})
		require.NoError(t, err)
		require.NotEqual(t, id, fresh, "a completed job frees its key")
		n, err := q.CancelJobs(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got, err := q.Lookup(fresh)
		require.NoError(t, err)
		require.Equal(t, jobs.StateCancelled, got.State)
		pruned, err := q.PruneJobs(ctx, now.Add(time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, 2, pruned, "the completed and the cancelled job")
		_, err = q.Lookup(id)
		require.ErrorIs(t, err, memory.ErrNoSuchJob)
	})

	t.Run("BatchesAreAllOrNothing", func(t *testing.T) {
		t.Parallel()
		q := memory.NewQueue(clock)
		ctx := context.Background()
		wake, stop := q.JobWakeups()
		defer stop()
		require.Error(t, q.Enqueue(ctx, []jobs.EnqueueParams{{Kind: "k"}, {Kind: "k", UniqueKey: "u"}}))
		require.Error(t, q.Enqueue(ctx, []jobs.EnqueueParams{{Kind: "k"}, {Kind: ""}}))
		next, err := q.NextJobAt(ctx, []string{"k"})
		require.NoError(t, err)
		require.True(t, next.IsZero(), "nothing was added")
		require.NoError(t, q.Enqueue(ctx, []jobs.EnqueueParams{{Kind: "k"}, {Kind: "k", RunAt: now.Add(time.Hour)}}))
		<-wake
		stats, err := q.JobStats(ctx, now)
		require.NoError(t, err)
		require.Equal(t, []jobs.Stat{{Kind: "k", Ready: 1, Scheduled: 1, OldestReady: now}}, stats)
	})

	t.Run("OutcomesOfTheHolderOnly", func(t *testing.T) {
		t.Parallel()
		q := memory.NewQueue(clock)
		ctx := context.Background()
		retried, _ := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k"})
		snoozed, _ := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k"})
		killed, _ := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "k", UniqueKey: "dead"})
		claimed, err := q.ClaimJobs(ctx, "w", lease, 10, now, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 3)
		later := now.Add(time.Minute)
		for _, id := range []int64{retried, snoozed, killed} {
			require.NoError(t, q.RetryJob(ctx, "other", id, later, "not mine"))
		}
		require.NoError(t, q.RetryJob(ctx, "w", retried, later, "failed"))
		require.NoError(t, q.SnoozeJob(ctx, "w", snoozed, later))
		require.NoError(t, q.KillJob(ctx, "w", killed, now, "permanent"))
		r, _ := q.Lookup(retried)
		require.Equal(t, jobs.StateRetryable, r.State)
		require.Equal(t, 1, r.Attempt)
		require.Equal(t, "failed", r.LastError)
		s, _ := q.Lookup(snoozed)
		require.Equal(t, jobs.StateAvailable, s.State)
		require.Zero(t, s.Attempt, "a snooze gives the attempt back")
		k, _ := q.Lookup(killed)
		require.Equal(t, jobs.StateDead, k.State)
		require.Empty(t, k.UniqueKey, "a dead job frees its key")
		next, err := q.NextJobAt(ctx, []string{"k"})
		require.NoError(t, err)
		require.Equal(t, later, next)
	})
}

// The queue serves the runner: every job runs once and is recorded
// completed, a failed attempt is retried, and an enqueue wakes an idle
// runner at once.
func TestQueueServesTheRunner(t *testing.T) {
	t.Parallel()
	q := memory.NewQueue(nil)
	var mu sync.Mutex
	runs := map[int64]int{}
	r, err := runner.New(q, q, runner.Config{PollInterval: time.Hour, RescueInterval: time.Hour, Workers: 8},
		runner.Kind{Name: "k", Backoff: func(int) time.Duration { return 0 }, Handler: runner.HandlerFunc(func(_ context.Context, j jobs.Job) error {
			mu.Lock()
			defer mu.Unlock()
			runs[j.ID]++
			if string(j.Payload) == "flaky" && j.Attempt == 1 {
				return errors.New("try again")
			}
			return nil
		})})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	const n = 100
	ids := make([]int64, 0, n)
	for i := range n {
		p := jobs.EnqueueParams{Kind: "k", AccountID: fmt.Sprintf("acc_%d", i%3)}
		if i%10 == 0 {
			p.Payload = []byte("flaky")
		}
		id, err := q.EnqueueJob(context.Background(), p)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if j, err := q.Lookup(id); err != nil || j.State != jobs.StateCompleted {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the poll interval is an hour: wake-ups and retries drive the runner")
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		want := 1
		if i%10 == 0 {
			want = 2
		}
		require.Equal(t, want, runs[id], "job %d", id)
	}
}
