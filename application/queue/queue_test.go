package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/queue"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

type fakeStore struct {
	stats   []jobs.Stat
	account string
}

func (f *fakeStore) AccountJobStats(_ context.Context, accountID string, _ time.Time) ([]jobs.Stat, error) {
	f.account = accountID
	return f.stats, nil
}

// Health adds the kinds up and finds the longest wait.
func TestHealthTotals(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	store := &fakeStore{stats: []jobs.Stat{
		{Kind: "email.deliver", Ready: 1, OldestReady: now.Add(-3 * time.Second)},
		{Kind: "message.deliver", Ready: 2, Scheduled: 4, Running: 1, Retrying: 2, Dead: 1, OldestReady: now.Add(-10 * time.Second)},
	}}
	h, err := queue.NewService(store, func() time.Time { return now }).Health(context.Background(), "acc_a")
	require.NoError(t, err)
	require.Equal(t, "acc_a", store.account)
	require.Equal(t, 3, h.Ready)
	require.Equal(t, 4, h.Scheduled)
	require.Equal(t, 1, h.Running)
	require.Equal(t, 2, h.Retrying)
	require.Equal(t, 1, h.Dead)
	require.Equal(t, 10*time.Second, h.Lag())
	require.Len(t, h.Kinds, 2)

	store.stats = nil
	h, err = queue.NewService(store, func() time.Time { return now }).Health(context.Background(), "acc_a")
	require.NoError(t, err)
	require.Zero(t, h.Lag(), "nothing waits")
	require.NotNil(t, h.Kinds)
}
