package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// WebhookFixture is a webhooks store on an empty database, and a way to
// create the accounts its rows belong to.
type WebhookFixture struct {
	Store      webhooks.Store
	NewAccount func(t *testing.T) string
}

func newEvent(accountID, threadID string, typ event.Type, n int) event.Event {
	id := ident.New(ident.Event)
	return event.Event{ID: id, AccountID: accountID, Type: typ, ThreadID: threadID,
		Payload: []byte(fmt.Sprintf(`{"event":%q,"event_id":%q,"n":%d}`, typ, id, n)), CreatedAt: at.Add(time.Duration(n) * time.Second)}
}

func newDelivery(e event.Event) webhook.Delivery {
	return webhook.Delivery{ID: ident.New(ident.Webhook), AccountID: e.AccountID, EventID: e.ID, EventType: e.Type, ThreadID: e.ThreadID,
		Status: webhook.Pending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
}

// Webhooks runs the contract of webhooks.Store against the fixture that
// open returns; open must give each call its own empty, migrated database.
func Webhooks(t *testing.T, open func(t *testing.T) WebhookFixture) {
	t.Run("EndpointRoundTrip", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		acc := f.NewAccount(t)
		r := f.Store.Repos()
		_, err := r.WebhookEndpoint(ctx, acc)
		require.True(t, failure.Is(err, failure.KindNotFound), "no endpoint yet: %v", err)

		rec := webhooks.Record{
			Endpoint: webhook.Endpoint{AccountID: acc, URL: "https://example.com/hook", Enabled: true,
				Events: []event.Type{event.MessageReceived, event.GroupCreated}, CreatedAt: at, UpdatedAt: at},
			SealedSecret: []byte{1, 2, 3, 0, 255},
		}
		saved, err := r.ChangeWebhookEndpoint(ctx, acc, func(cur webhooks.Record, found bool) (webhooks.Record, error) {
			require.False(t, found)
			require.Zero(t, cur)
			return rec, nil
		})
		require.NoError(t, err)
		require.Equal(t, rec, saved)
		got, err := r.WebhookEndpoint(ctx, acc)
		require.NoError(t, err)
		require.Equal(t, rec, got)

		failing := at.Add(time.Minute)
		rec.Endpoint.Events = nil
		rec.Endpoint.FailingSince = &failing
		rec.Endpoint.InlineMediaMaxBytes = 5 << 20
		rec.Endpoint.Disable(webhook.ReasonGone, at.Add(time.Hour))
		rec.SealedPrevious, rec.Endpoint.PreviousUntil = rec.SealedSecret, at.Add(24*time.Hour)
		rec.SealedSecret = []byte{9, 9}
		_, err = r.ChangeWebhookEndpoint(ctx, acc, func(cur webhooks.Record, found bool) (webhooks.Record, error) {
			require.True(t, found)
			require.Equal(t, got, cur, "the change starts from what is stored")
			return rec, nil
		})
		require.NoError(t, err, "saving again replaces")
		got, err = r.WebhookEndpoint(ctx, acc)
		require.NoError(t, err)
		require.Equal(t, rec, got)

		boom := errors.New("boom")
		_, err = r.ChangeWebhookEndpoint(ctx, acc, func(cur webhooks.Record, _ bool) (webhooks.Record, error) {
			cur.Endpoint.URL = "https://example.com/other"
			return cur, boom
		})
		require.ErrorIs(t, err, boom)
		got, err = r.WebhookEndpoint(ctx, acc)
		require.NoError(t, err)
		require.Equal(t, rec, got, "a failed change saves nothing")
	})

	t.Run("DeliveriesInOrderPerThread", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		acc, other := f.NewAccount(t), f.NewAccount(t)
		r := f.Store.Repos()
		var ds []webhook.Delivery
		for i, thread := range []string{"thr_a", "thr_a", "thr_b"} {
			e := newEvent(acc, thread, event.MessageReceived, i)
			d := newDelivery(e)
			require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
				return writes.Batch{Events: []event.Event{e}, Deliveries: []webhook.Delivery{d}}, nil
			}))
			got, err := r.WebhookDelivery(ctx, "", d.ID)
			require.NoError(t, err)
			require.Equal(t, e.Payload, got.Payload, "the delivery reads its event's payload")
			require.Positive(t, got.Seq)
			d.Seq, d.Payload = got.Seq, got.Payload
			require.Equal(t, d, got)
			ds = append(ds, got)
		}
		_, err := r.WebhookDelivery(ctx, other, ds[0].ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's delivery is not found: %v", err)

		earlier := func(d webhook.Delivery) bool {
			send, err := r.DeliveriesToSend(ctx, []string{d.ID})
			require.NoError(t, err)
			require.Len(t, send, 1)
			return send[0].EarlierUntried
		}
		require.False(t, earlier(ds[0]))
		require.True(t, earlier(ds[1]), "the second event of thr_a waits for the first")
		require.False(t, earlier(ds[2]), "another thread does not wait")

		send, err := r.DeliveriesToSend(ctx, []string{ds[1].ID})
		require.NoError(t, err)
		require.Equal(t, []webhooks.Sendable{{Delivery: ds[1], EarlierUntried: true}}, send, "no endpoint yet")
		rec := webhooks.Record{Endpoint: webhook.Endpoint{AccountID: acc, URL: "https://example.com/h", Enabled: true, InlineMediaMaxBytes: 4096, CreatedAt: at, UpdatedAt: at}, SealedSecret: []byte{7}}
		saveEndpoint(t, f.Store, rec)
		send, err = r.DeliveriesToSend(ctx, []string{ds[2].ID})
		require.NoError(t, err)
		require.Equal(t, []webhooks.Sendable{{Delivery: ds[2], Endpoint: rec, Found: true}}, send)
		send, err = r.DeliveriesToSend(ctx, []string{"whk_missing", ds[2].ID, ds[0].ID, ds[1].ID})
		require.NoError(t, err)
		byID := map[string]webhooks.Sendable{}
		for _, x := range send {
			byID[x.Delivery.ID] = x
		}
		require.Len(t, byID, 3, "the three that exist, each once; the missing one left out")
		require.Equal(t, webhooks.Sendable{Delivery: ds[0], Endpoint: rec, Found: true}, byID[ds[0].ID])
		require.Equal(t, webhooks.Sendable{Delivery: ds[1], Endpoint: rec, Found: true, EarlierUntried: true}, byID[ds[1].ID])
		require.Equal(t, webhooks.Sendable{Delivery: ds[2], Endpoint: rec, Found: true}, byID[ds[2].ID])
		send, err = r.DeliveriesToSend(ctx, []string{"whk_missing"})
		require.NoError(t, err)
		require.Empty(t, send)

		ds[0].Attempts, ds[0].LastStatusCode, ds[0].LastError, ds[0].NextAttemptAt = 1, 500, "status 500", at.Add(5*time.Second)
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
			return writes.Batch{DeliveryStates: []webhook.Delivery{ds[0]}, Attempts: []writes.Attempt{{DeliveryID: ds[0].ID,
				Attempt: webhook.Attempt{At: at, StatusCode: 500, Latency: 1500 * time.Microsecond, Error: "status 500", Response: "oops"}}}}, nil
		}))
		require.False(t, earlier(ds[1]), "once tried, the earlier event no longer holds the thread")

		ds[1].Status, ds[1].Attempts, ds[1].LastStatusCode, ds[1].UpdatedAt = webhook.Succeeded, 1, 204, at.Add(time.Second)
		ghost := ds[2]
		ghost.ID = "whk_ghost"
		require.NoError(t, r.RecordWebhookAttempts(ctx,
			[]webhooks.LoggedAttempt{{DeliveryID: ds[1].ID, Attempt: webhook.Attempt{At: at, StatusCode: 204, Latency: time.Millisecond}}},
			[]webhook.Delivery{ds[1], ghost}), "a batch update skips missing deliveries")
		got, err := r.WebhookDelivery(ctx, acc, ds[1].ID)
		require.NoError(t, err)
		ds[1].Payload = got.Payload
		require.Equal(t, ds[1], got)

		list, total, err := r.WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: acc, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 3, total)
		require.Equal(t, []string{ds[2].ID, ds[1].ID, ds[0].ID}, []string{list[0].ID, list[1].ID, list[2].ID}, "newest first")
		require.Equal(t, []webhook.Attempt{{At: at, StatusCode: 500, Latency: 1500 * time.Microsecond, Error: "status 500", Response: "oops"}}, list[2].Log)
		require.Empty(t, list[0].Log)

		list, total, err = r.WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: acc, Status: webhook.Pending, Limit: 1, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, list, 1)
		require.Equal(t, ds[0].ID, list[0].ID)

		// Attempts logged with their deliveries' new state, together.
		ds[2].Status, ds[2].Attempts, ds[2].LastStatusCode, ds[2].UpdatedAt = webhook.Succeeded, 1, 200, at.Add(2*time.Second)
		ds[0].Status, ds[0].Attempts, ds[0].LastStatusCode, ds[0].LastError, ds[0].UpdatedAt = webhook.Succeeded, 2, 202, "", at.Add(3*time.Second)
		second := webhook.Attempt{At: at.Add(time.Second), StatusCode: 202, Latency: 2 * time.Millisecond, Response: "accepted"}
		require.NoError(t, r.RecordWebhookAttempts(ctx, []webhooks.LoggedAttempt{
			{DeliveryID: ds[2].ID, Attempt: webhook.Attempt{At: at, StatusCode: 200, Latency: time.Millisecond}},
			{DeliveryID: ds[0].ID, Attempt: second},
		}, []webhook.Delivery{ds[2], ds[0]}))
		list, total, err = r.WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: acc, Status: webhook.Succeeded, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 3, total)
		require.Equal(t, []string{ds[2].ID, ds[1].ID, ds[0].ID}, []string{list[0].ID, list[1].ID, list[2].ID})
		require.Equal(t, 2, list[2].Attempts)
		require.Equal(t, []webhook.Attempt{{At: at, StatusCode: 500, Latency: 1500 * time.Microsecond, Error: "status 500", Response: "oops"}, second}, list[2].Log)
		require.Len(t, list[0].Log, 1)

		_, total, err = r.WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: acc, EventType: event.GroupCreated, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total)
		list, total, err = r.WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: other, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, list)
	})

	t.Run("EventsAfterCursor", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		acc, other := f.NewAccount(t), f.NewAccount(t)
		r := f.Store.Repos()
		var ids []string
		for i := range 5 {
			e := newEvent(acc, "thr_x", event.MessageSent, i)
			require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
				return writes.Batch{Events: []event.Event{e, newEvent(other, "thr_y", event.MessageSent, i)}}, nil
			}))
			ids = append(ids, e.ID)
		}
		page, err := r.EventsAfter(ctx, acc, "", 3)
		require.NoError(t, err)
		require.Equal(t, ids[:3], eventIDs(page))
		page, err = r.EventsAfter(ctx, acc, ids[2], 10)
		require.NoError(t, err)
		require.Equal(t, ids[3:], eventIDs(page))
		page, err = r.EventsAfter(ctx, acc, ids[4], 10)
		require.NoError(t, err)
		require.Empty(t, page)
		otherPage, err := r.EventsAfter(ctx, other, "", 1)
		require.NoError(t, err)
		_, err = r.EventsAfter(ctx, acc, otherPage[0].ID, 10)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's cursor is unknown: %v", err)
	})

	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		acc := f.NewAccount(t)
		e := newEvent(acc, "thr_a", event.MessageReceived, 0)
		d := newDelivery(e)
		boom := errors.New("boom")
		err := f.Store.Decide(ctx, func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
			return writes.Batch{Events: []event.Event{e}, Deliveries: []webhook.Delivery{d}}, boom
		})
		require.ErrorIs(t, err, boom)
		_, err = f.Store.Repos().WebhookDelivery(ctx, "", d.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "rolled back: %v", err)
		page, err := f.Store.Repos().EventsAfter(ctx, acc, "", 10)
		require.NoError(t, err)
		require.Empty(t, page)
	})

	t.Run("ConcurrentFanout", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		acc := f.NewAccount(t)
		const writers, each = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					errs <- f.Store.Decide(ctx, func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
						e := newEvent(acc, fmt.Sprintf("thr_%d", w), event.MessageReceived, i)
						return writes.Batch{Events: []event.Event{e}, Deliveries: []webhook.Delivery{newDelivery(e)}}, nil
					})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		_, total, err := f.Store.Repos().WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: acc, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, writers*each, total)
	})
}

func eventIDs(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// saveEndpoint inserts or replaces rec's account's endpoint with rec.
func saveEndpoint(t *testing.T, s webhooks.Store, rec webhooks.Record) {
	t.Helper()
	_, err := s.Repos().ChangeWebhookEndpoint(context.Background(), rec.Endpoint.AccountID, func(webhooks.Record, bool) (webhooks.Record, error) {
		return rec, nil
	})
	require.NoError(t, err)
}
