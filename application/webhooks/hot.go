package webhooks

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Batched is what every delivery attempt reads and writes, many times a
// second: the store's implementation (store.Batched) serves the calls
// waiting at one moment with one statement; without one, each call is its
// own (inline).
type Batched interface {
	// Sendable reads what an attempt of a delivery needs (see
	// Repos.DeliveriesToSend); NotFound when the delivery is gone.
	Sendable(ctx context.Context, deliveryID string) (Sendable, error)
	// RecordSuccess logs a successful attempt and saves its delivery
	// (see Repos.RecordWebhookAttempts), committed when it returns.
	RecordSuccess(ctx context.Context, s LoggedSuccess) error
}

// LoggedSuccess is a successful attempt and its delivery, succeeded.
type LoggedSuccess struct {
	Delivery webhook.Delivery
	Attempt  webhook.Attempt
}

// inline is Batched over the repositories, one statement per call.
type inline struct{ store Store }

func (i inline) Sendable(ctx context.Context, deliveryID string) (Sendable, error) {
	found, err := i.store.Repos().DeliveriesToSend(ctx, []string{deliveryID})
	if err != nil {
		return Sendable{}, err
	}
	if len(found) == 0 {
		return Sendable{}, failure.NotFound("delivery")
	}
	return found[0], nil
}

func (i inline) RecordSuccess(ctx context.Context, s LoggedSuccess) error {
	return i.store.Repos().RecordWebhookAttempts(ctx, []LoggedAttempt{{DeliveryID: s.Delivery.ID, Attempt: s.Attempt}}, []webhook.Delivery{s.Delivery})
}
