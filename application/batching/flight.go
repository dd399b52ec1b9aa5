package batching

import (
	"context"
	"errors"
	"sync"
)

// Flight lets concurrent callers asking for the same key share one call:
// the first runs it, the others wait for its answer. A cache in front of a
// read uses it for its misses: when a hot entry expires, the requests that
// arrive together then cost one read, not one each, all at once, on a pool
// that may have to open connections for them.
type Flight[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*flightCall[V]
}

type flightCall[V any] struct {
	done  chan struct{}
	value V
	err   error
	// waiting counts the callers waiting for it (for tests).
	waiting int
}

// errFlightPanicked answers the waiters of a call that panicked.
var errFlightPanicked = errors.New("the shared call panicked")

// Do returns fn's answer for key, from a call already running for key if
// there is one. A waiter whose own context is still live does not take the
// running call's context error: the caller that ran it went away, so it
// runs the call again.
func (f *Flight[K, V]) Do(ctx context.Context, key K, fn func() (V, error)) (V, error) {
	for {
		f.mu.Lock()
		c, running := f.calls[key]
		if running {
			c.waiting++
		} else {
			c = &flightCall[V]{done: make(chan struct{}), err: errFlightPanicked}
			if f.calls == nil {
				f.calls = map[K]*flightCall[V]{}
			}
			f.calls[key] = c
		}
		f.mu.Unlock()
		if !running {
			return f.run(key, c, fn)
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if isContextError(c.err) && ctx.Err() == nil {
			continue
		}
		return c.value, c.err
	}
}

func (f *Flight[K, V]) run(key K, c *flightCall[V], fn func() (V, error)) (V, error) {
	defer func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		close(c.done)
	}()
	c.value, c.err = fn()
	return c.value, c.err
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
