package store

import (
	"context"
	"sync"
)

// Batched reads and writes (Batched): the job runners' workers each ask
// for their own row or write their own outcome, many at once; a batcher
// turns the calls waiting at one moment into one statement.

// batcher runs calls in batches. A call joins the queue and, when no batch
// is running, starts a goroutine that runs whatever is queued, again and
// again until nothing is left, while each caller waits for the batch that
// holds its call. Under load one batch serves many callers; alone, a call
// runs at once in a batch of one.
type batcher[In, Out any] struct {
	max int
	run func(ctx context.Context, in []In) ([]result[Out], error)

	mu      sync.Mutex
	pending []call[In, Out]
	running bool
}

// result is one call's outcome in a batch.
type result[Out any] struct {
	out Out
	err error
}

type call[In, Out any] struct {
	ctx  context.Context
	in   In
	done chan result[Out]
}

// newBatcher returns a batcher of at most max calls per batch. run does a batch:
// it returns one Result per input, in order, or an error for the whole
// batch. A batch runs without its callers' cancellation: it serves them
// all, and is short.
func newBatcher[In, Out any](max int, run func(ctx context.Context, in []In) ([]result[Out], error)) *batcher[In, Out] {
	return &batcher[In, Out]{max: max, run: run}
}

// do queues in and returns its result once its batch has run, or ctx's
// error if ctx ends first.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := call[In, Out]{ctx: ctx, in: in, done: make(chan result[Out], 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.running {
		b.running = true
		go b.drain()
	}
	b.mu.Unlock()
	select {
	case r := <-c.done:
		return r.out, r.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// drain runs batches until the queue is empty.
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
		b.runBatch(batch)
	}
}

// runBatch runs one batch for the callers still waiting, without their
// cancellation (it serves them all) but within the latest of their
// deadlines: past it, nobody waits for its answer.
func (b *batcher[In, Out]) runBatch(batch []call[In, Out]) {
	live := batch[:0]
	ctxs := make([]context.Context, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- result[Out]{err: err}
			continue
		}
		live = append(live, c)
		ctxs = append(ctxs, c.ctx)
	}
	if len(live) == 0 {
		return
	}
	in := make([]In, len(live))
	for i, c := range live {
		in[i] = c.in
	}
	ctx, cancel := sharedContext(ctxs)
	defer cancel()
	out, err := b.run(ctx, in)
	for i, c := range live {
		if err != nil {
			c.done <- result[Out]{err: err}
			continue
		}
		c.done <- out[i]
	}
}

// align answers each of keys from found, the rows a batched read returned
// in any order and without the keys it did not find: a key with no row
// gets missing as its error.
func align[K comparable, V any](keys []K, found []V, key func(V) K, missing error) []result[V] {
	byKey := make(map[K]V, len(found))
	for _, v := range found {
		byKey[key(v)] = v
	}
	out := make([]result[V], len(keys))
	for i, k := range keys {
		v, ok := byKey[k]
		if !ok {
			out[i].err = missing
			continue
		}
		out[i].out = v
	}
	return out
}
