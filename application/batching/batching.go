// Package batching groups concurrent calls of one kind into one call of a
// batch: group commit for writes, a dataloader for reads. Job runners run
// many handlers at once; each handler asks for its own row or writes its
// own outcome, and a Batcher turns those into one statement for all the
// callers waiting at that moment.
package batching

import (
	"context"
	"sync"
)

// Batcher runs calls in batches. A call joins the queue and, when no batch
// is running, starts a goroutine that runs whatever is queued, again and
// again until nothing is left, while each caller waits for the batch that
// holds its call. Under load one batch serves many callers; alone, a call
// runs at once in a batch of one.
type Batcher[In, Out any] struct {
	max int
	run func(ctx context.Context, in []In) ([]Result[Out], error)

	mu      sync.Mutex
	pending []call[In, Out]
	running bool
}

// Result is one call's outcome in a batch.
type Result[Out any] struct {
	Out Out
	Err error
}

type call[In, Out any] struct {
	ctx  context.Context
	in   In
	done chan Result[Out]
}

// New returns a Batcher of at most max calls per batch. run does a batch:
// it returns one Result per input, in order, or an error for the whole
// batch. A batch runs without its callers' cancellation: it serves them
// all, and is short.
func New[In, Out any](max int, run func(ctx context.Context, in []In) ([]Result[Out], error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{max: max, run: run}
}

// Do queues in and returns its result once its batch has run.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	c := call[In, Out]{ctx: ctx, in: in, done: make(chan Result[Out], 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.running {
		b.running = true
		go b.drain()
	}
	b.mu.Unlock()
	r := <-c.done
	return r.Out, r.Err
}

// Waiting reports the calls queued for a batch now.
func (b *Batcher[In, Out]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// drain runs batches until the queue is empty.
func (b *Batcher[In, Out]) drain() {
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
				c.done <- Result[Out]{Err: err}
				continue
			}
			c.done <- out[i]
		}
	}
}

// Align answers each of keys from found, the rows a batched read returned
// in any order and without the keys it did not find: a key with no row
// gets missing as its error.
func Align[K comparable, V any](keys []K, found []V, key func(V) K, missing error) []Result[V] {
	byKey := make(map[K]V, len(found))
	for _, v := range found {
		byKey[key(v)] = v
	}
	out := make([]Result[V], len(keys))
	for i, k := range keys {
		v, ok := byKey[k]
		if !ok {
			out[i].Err = missing
			continue
		}
		out[i].Out = v
	}
	return out
}
