package webhooks

import (
	"context"
	"sync"

	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// maxBatch bounds the successes written in one transaction.
const maxBatch = 500

// successBatch writes the outcomes of successful attempts in shared
// transactions (group commit): the first caller to find no write in
// progress writes everything queued, again and again until nothing is
// left, while later callers wait for the write that holds theirs. Under
// load one commit records many deliveries; alone, a caller writes its own
// at once.
type successBatch struct {
	mu       sync.Mutex
	pending  []success
	flushing bool
}

type success struct {
	d    webhook.Delivery
	a    webhook.Attempt
	done chan error
}

// recordSuccess logs a successful attempt and marks its delivery
// succeeded; it returns once that is committed.
func (s *Service) recordSuccess(ctx context.Context, d webhook.Delivery, a webhook.Attempt) error {
	it := success{d: d, a: a, done: make(chan error, 1)}
	b := &s.batch
	b.mu.Lock()
	b.pending = append(b.pending, it)
	if b.flushing {
		b.mu.Unlock()
		return <-it.done
	}
	b.flushing = true
	b.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	for {
		b.mu.Lock()
		n := min(len(b.pending), maxBatch)
		batch := b.pending[:n:n]
		b.pending = b.pending[n:]
		if n == 0 {
			b.flushing = false
			b.pending = nil
			b.mu.Unlock()
			break
		}
		b.mu.Unlock()
		err := s.writeSuccesses(ctx, batch)
		for _, x := range batch {
			x.done <- err
		}
	}
	return <-it.done
}

func (s *Service) writeSuccesses(ctx context.Context, batch []success) error {
	return s.store.Transact(ctx, func(ctx context.Context, r Repos) error {
		logged := make([]LoggedAttempt, len(batch))
		for i, x := range batch {
			logged[i] = LoggedAttempt{DeliveryID: x.d.ID, Attempt: x.a}
		}
		if err := r.InsertWebhookAttempts(ctx, logged); err != nil {
			return err
		}
		ds := make([]webhook.Delivery, len(batch))
		for i, x := range batch {
			ds[i] = x.d
		}
		return r.UpdateWebhookDeliveries(ctx, ds)
	})
}
