package cron

import "sync"

// batcher runs the writes of concurrent callers together: a caller's item
// waits with the others', and up to two callers at a time lead, each
// taking what waits (at most maxBatch items) for one write, until nothing
// waits. So ten thousand calls due at one instant cost tens of statements,
// not ten thousand, and one slow write holds up only its own batch.
type batcher[I, R any] struct {
	write   func([]I) (R, error)
	mu      sync.Mutex
	waiting []*batchItem[I, R]
	leaders int
}

type batchItem[I, R any] struct {
	item I
	r    R
	err  error
	done chan struct{}
}

const (
	maxBatch   = 1000
	maxLeaders = 1
)

func newBatcher[I, R any](write func([]I) (R, error)) *batcher[I, R] {
	return &batcher[I, R]{write: write}
}

// do writes item with the items waiting beside it and returns the result
// of the write that took it.
func (b *batcher[I, R]) do(item I) (R, error) {
	it := &batchItem[I, R]{item: item, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, it)
	lead := b.leaders < maxLeaders
	if lead {
		b.leaders++
	}
	b.mu.Unlock()
	if lead {
		b.lead()
	}
	<-it.done
	return it.r, it.err
}

// lead writes what waits, a batch at a time, until nothing does.
func (b *batcher[I, R]) lead() {
	for {
		b.mu.Lock()
		if len(b.waiting) == 0 {
			b.leaders--
			b.mu.Unlock()
			return
		}
		n := min(len(b.waiting), maxBatch)
		batch := b.waiting[:n:n]
		b.waiting = append([]*batchItem[I, R](nil), b.waiting[n:]...)
		b.mu.Unlock()
		items := make([]I, n)
		for i, it := range batch {
			items[i] = it.item
		}
		r, err := b.write(items)
		for _, it := range batch {
			it.r, it.err = r, err
			close(it.done)
		}
	}
}
