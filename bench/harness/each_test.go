package harness

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEachCallsEveryItemOrStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	var sum atomic.Int64
	items := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if err := ForEach(context.Background(), 3, items, func(_ context.Context, n int) error { sum.Add(int64(n)); return nil }); err != nil {
		t.Fatal(err)
	}
	if sum.Load() != 55 {
		t.Fatalf("sum of the items called: %d, want 55", sum.Load())
	}
	boom := errors.New("boom")
	var calls atomic.Int64
	err := ForEach(context.Background(), 1, items, func(_ context.Context, n int) error {
		calls.Add(1)
		if n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the first error", err)
	}
	if calls.Load() > 3 {
		t.Fatalf("%d calls after the failure at the second item: the rest should be skipped", calls.Load())
	}
	if err := ForEach(context.Background(), 4, []int(nil), func(context.Context, int) error { return boom }); err != nil {
		t.Fatalf("no items: %v", err)
	}
}
