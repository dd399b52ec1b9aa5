package store

import (
	"context"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// maxBatched bounds the rows one batched statement reads or writes.
const maxBatched = 500

var (
	_ webhooks.Batched     = (*Batched)(nil)
	_ appmessaging.Batched = (*Batched)(nil)
)

// Batched is the batched implementation of the per-item reads and writes
// that the job runners' workers and every send make many times a second:
// the calls waiting at one moment share one statement (a lone call runs
// at once, alone).
type Batched struct {
	sendables    *batcher[string, webhooks.Sendable]
	successes    *batcher[webhooks.LoggedSuccess, struct{}]
	deliverables *batcher[string, appmessaging.Deliverable]
}

func newBatched(db *DB) *Batched {
	hooks, msgs := db.WebhookStore(), db.MessagingStore()
	return &Batched{
		sendables: newBatcher(maxBatched, func(ctx context.Context, ids []string) ([]result[webhooks.Sendable], error) {
			found, err := hooks.DeliveriesToSend(ctx, ids)
			if err != nil {
				return nil, err
			}
			return align(ids, found, func(s webhooks.Sendable) string { return s.Delivery.ID }, error(failure.NotFound("delivery"))), nil
		}),
		successes: newBatcher(maxBatched, func(ctx context.Context, in []webhooks.LoggedSuccess) ([]result[struct{}], error) {
			logged := make([]webhooks.LoggedAttempt, len(in))
			ds := make([]webhook.Delivery, len(in))
			for i, s := range in {
				logged[i] = webhooks.LoggedAttempt{DeliveryID: s.Delivery.ID, Attempt: s.Attempt}
				ds[i] = s.Delivery
			}
			if err := hooks.RecordWebhookAttempts(ctx, logged, ds); err != nil {
				return nil, err
			}
			return make([]result[struct{}], len(in)), nil
		}),
		deliverables: newBatcher(maxBatched, func(ctx context.Context, ids []string) ([]result[appmessaging.Deliverable], error) {
			found, err := msgs.MessagesToDeliver(ctx, ids)
			if err != nil {
				return nil, err
			}
			return align(ids, found, func(d appmessaging.Deliverable) string { return d.Message.ID }, error(failure.NotFound("message"))), nil
		}),
	}
}

// Batched returns the database's batched reads and writes.
func (db *DB) Batched() *Batched { return db.batched }

// Sendable reads what an attempt of a delivery needs; NotFound when the
// delivery is gone.
func (b *Batched) Sendable(ctx context.Context, deliveryID string) (webhooks.Sendable, error) {
	return b.sendables.do(ctx, deliveryID)
}

// RecordSuccess logs a successful attempt and saves its delivery, in one
// transaction with concurrent callers' successes.
func (b *Batched) RecordSuccess(ctx context.Context, s webhooks.LoggedSuccess) error {
	_, err := b.successes.do(ctx, s)
	return err
}

// Deliverable reads what delivering a message needs; NotFound when the
// message or its thread is gone.
func (b *Batched) Deliverable(ctx context.Context, messageID string) (appmessaging.Deliverable, error) {
	return b.deliverables.do(ctx, messageID)
}
