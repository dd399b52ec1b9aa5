package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// endpointsFunc is an EndpointsReader.
type endpointsFunc func(ctx context.Context, accountIDs []string) ([]webhooks.Record, error)

func (f endpointsFunc) WebhookEndpoints(ctx context.Context, accountIDs []string) ([]webhooks.Record, error) {
	return f(ctx, accountIDs)
}

// The fan-out adds a delivery and its job for each event the account's
// endpoint subscribes to, except an event the batch delivers already (a
// test delivery), and reads no endpoint when no event is left.
func TestFanOutLeavesEventsTheBatchDelivers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	reads := 0
	fanOut := webhooks.NewFanOut(func() time.Time { return now }).Through(endpointsFunc(func(_ context.Context, ids []string) ([]webhooks.Record, error) {
		reads++
		require.Equal(t, []string{"acc_1"}, ids)
		return []webhooks.Record{{Endpoint: webhook.Endpoint{AccountID: "acc_1", Enabled: true}}}, nil
	}))
	sent := event.Event{ID: "evt_sent", AccountID: "acc_1", Type: event.MessageSent, CreatedAt: now}
	test := event.Event{ID: "evt_test", AccountID: "acc_1", Type: event.WebhookTest, CreatedAt: now}
	delivered := webhook.Delivery{ID: "whk_test", AccountID: "acc_1", EventID: test.ID, EventType: test.Type, Status: webhook.Pending}

	b := writes.Batch{Events: []event.Event{sent, test}, Deliveries: []webhook.Delivery{delivered}}
	require.NoError(t, fanOut.React(ctx, &b))
	require.Len(t, b.Deliveries, 2)
	require.Equal(t, delivered, b.Deliveries[0])
	require.Equal(t, sent.ID, b.Deliveries[1].EventID)
	require.Len(t, b.Jobs, 1, "one job, for the new delivery")
	require.Equal(t, 1, reads)

	only := writes.Batch{Events: []event.Event{test}, Deliveries: []webhook.Delivery{delivered}}
	require.NoError(t, fanOut.React(ctx, &only))
	require.Len(t, only.Deliveries, 1)
	require.Empty(t, only.Jobs)
	require.Equal(t, 1, reads, "no endpoint read for a batch that delivers all its events")
}
