package messaging_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A message whose status is past queued is never handed to the provider
// again, whatever the job that delivers it (a rescued attempt, a re-run
// dead job).
func TestDeliveryNeverResendsAMessagePastQueued(t *testing.T) {
	t.Parallel()
	for _, status := range []domain.Status{domain.Sent, domain.Delivered, domain.Read, domain.Failed} {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			var calls atomic.Int32
			b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
				calls.Add(1)
				return messaging.Receipt{ProviderMessageID: "wamid.again", Status: domain.Sent}, nil
			}
			m, job := b.queued(t, 2)
			m.Status = status
			require.NoError(t, b.db.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{{MessageID: m.ID, Status: status, UpdatedAt: time.Now()}}}))
			require.NoError(t, b.svc.Work(ctx, job))
			require.Zero(t, calls.Load(), "a %s message is not sent again", status)
			require.Equal(t, status, b.status(t, m.ID).Status)
		})
	}
}

// A provider call that succeeds as the job's context ends (its timeout, or
// its lease lost) is still recorded: the message would otherwise stay
// queued and be sent again by the next attempt.
func TestDeliveryRecordsASendWhoseContextEnded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
		calls.Add(1)
		cancel() // the lease is lost while the provider answers
		return messaging.Receipt{ProviderMessageID: "wamid.late", Status: domain.Sent}, nil
	}
	m, job := b.queued(t, 1)
	require.NoError(t, b.svc.Work(ctx, job))
	got := b.status(t, m.ID)
	require.Equal(t, domain.Sent, got.Status)
	require.Equal(t, "wamid.late", got.ProviderMessageID)
	require.NoError(t, b.svc.Work(context.Background(), job), "the rescued attempt")
	require.EqualValues(t, 1, calls.Load(), "sent once")
}
