package webhooks

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/batching"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// maxBatch bounds the deliveries read, or the successes written, by one
// statement.
const maxBatch = 500

// success is a successful attempt to record.
type success struct {
	d webhook.Delivery
	a webhook.Attempt
}

// newSuccessBatch records successful attempts in shared transactions:
// each attempt's log row and its delivery's new status, for a whole batch
// in one commit.
func (s *Service) newSuccessBatch() *batching.Batcher[success, struct{}] {
	return batching.New(maxBatch, s.writeSuccesses)
}

func (s *Service) writeSuccesses(ctx context.Context, batch []success) ([]batching.Result[struct{}], error) {
	logged := make([]LoggedAttempt, len(batch))
	ds := make([]webhook.Delivery, len(batch))
	for i, x := range batch {
		logged[i] = LoggedAttempt{DeliveryID: x.d.ID, Attempt: x.a}
		ds[i] = x.d
	}
	if err := s.store.Repos().RecordWebhookAttempts(ctx, logged, ds); err != nil {
		return nil, err
	}
	return make([]batching.Result[struct{}], len(batch)), nil
}

// recordSuccess logs a successful attempt and marks its delivery
// succeeded; it returns once that is committed.
func (s *Service) recordSuccess(ctx context.Context, d webhook.Delivery, a webhook.Attempt) error {
	_, err := s.successes.Do(ctx, success{d: d, a: a})
	return err
}

// newSendableLoader reads what attempts need (DeliveriesToSend) for the
// deliveries that concurrent workers are about to attempt, in one query.
func (s *Service) newSendableLoader() *batching.Batcher[string, Sendable] {
	return batching.New(maxBatch, s.readSendables)
}

func (s *Service) readSendables(ctx context.Context, ids []string) ([]batching.Result[Sendable], error) {
	found, err := s.store.Repos().DeliveriesToSend(ctx, ids)
	if err != nil {
		return nil, err
	}
	return batching.Align(ids, found, func(x Sendable) string { return x.Delivery.ID }, error(failure.NotFound("delivery"))), nil
}
