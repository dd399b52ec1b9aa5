package webhooks

import (
	"context"
	"sync"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// batcher groups concurrent calls of one kind into one store call each
// (group commit for writes, a dataloader for reads). Many workers deliver
// at once; a call joins the queue and, when no batch is running, starts a
// goroutine that runs whatever is queued, again and again until nothing
// is left, while each caller waits for the batch that holds its call.
// Under load one statement serves many deliveries; alone, a call runs at
// once in a batch of one.
type batcher[In, Out any] struct {
	// max bounds the calls of one batch.
	max int
	// run does a batch; it returns one result per input, in order, or an
	// error for the whole batch.
	run func(ctx context.Context, in []In) ([]result[Out], error)

	mu      sync.Mutex
	pending []call[In, Out]
	running bool
}

type call[In, Out any] struct {
	ctx  context.Context
	in   In
	done chan result[Out]
}

type result[Out any] struct {
	out Out
	err error
}

// do queues in and returns its result once its batch has run.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := call[In, Out]{ctx: ctx, in: in, done: make(chan result[Out], 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.running {
		b.running = true
		go b.drain()
	}
	b.mu.Unlock()
	r := <-c.done
	return r.out, r.err
}

// drain runs batches until the queue is empty. A batch runs without its
// callers' cancellation: it serves them all, and is short.
func (b *batcher[In, Out]) drain() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.max)
		if n == 0 {
			b.running = false
			b.pending = nil
			b.mu.Unlock()
			return
		}
		batch := b.pending[:n:n]
		b.pending = b.pending[n:]
		b.mu.Unlock()
		in := make([]In, len(batch))
		for i, c := range batch {
			in[i] = c.in
		}
		out, err := b.run(context.WithoutCancel(batch[0].ctx), in)
		for i, c := range batch {
			if err != nil {
				c.done <- result[Out]{err: err}
				continue
			}
			c.done <- out[i]
		}
	}
}

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
func (s *Service) newSuccessBatch() *batcher[success, struct{}] {
	return &batcher[success, struct{}]{max: maxBatch, run: s.writeSuccesses}
}

func (s *Service) writeSuccesses(ctx context.Context, batch []success) ([]result[struct{}], error) {
	logged := make([]LoggedAttempt, len(batch))
	ds := make([]webhook.Delivery, len(batch))
	for i, x := range batch {
		logged[i] = LoggedAttempt{DeliveryID: x.d.ID, Attempt: x.a}
		ds[i] = x.d
	}
	if err := s.store.Repos().RecordWebhookAttempts(ctx, logged, ds); err != nil {
		return nil, err
	}
	return make([]result[struct{}], len(batch)), nil
}

// recordSuccess logs a successful attempt and marks its delivery
// succeeded; it returns once that is committed.
func (s *Service) recordSuccess(ctx context.Context, d webhook.Delivery, a webhook.Attempt) error {
	_, err := s.successes.do(ctx, success{d: d, a: a})
	return err
}

// newSendableLoader reads what attempts need (DeliveriesToSend) for the
// deliveries that concurrent workers are about to attempt, in one query.
func (s *Service) newSendableLoader() *batcher[string, Sendable] {
	return &batcher[string, Sendable]{max: maxBatch, run: s.readSendables}
}

func (s *Service) readSendables(ctx context.Context, ids []string) ([]result[Sendable], error) {
	found, err := s.store.Repos().DeliveriesToSend(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Sendable, len(found))
	for _, x := range found {
		byID[x.Delivery.ID] = x
	}
	out := make([]result[Sendable], len(ids))
	for i, id := range ids {
		x, ok := byID[id]
		if !ok {
			out[i].err = failure.NotFound("delivery")
			continue
		}
		out[i].out = x
	}
	return out, nil
}
