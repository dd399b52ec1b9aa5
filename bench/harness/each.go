package harness

import (
	"context"
	"sync"
)

// ForEach calls fn with each item from workers goroutines at once and
// returns the first error; after one, the items not started are skipped
// and ctx is cancelled for the calls running.
func ForEach[T any](ctx context.Context, workers int, items []T, fn func(ctx context.Context, item T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan T)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range max(1, min(workers, len(items))) {
		wg.Go(func() {
			for item := range next {
				if err := fn(ctx, item); err != nil {
					select {
					case errs <- err:
					default:
					}
					cancel()
				}
			}
		})
	}
	for _, item := range items {
		select {
		case next <- item:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}
