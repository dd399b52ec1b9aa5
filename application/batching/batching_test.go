package batching_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-dev/switchboard/application/batching"
)

// Calls queued while a batch runs share the next one, each caller gets its
// own result, and a batch's error reaches every caller in it.
func TestBatcherGroupsCallsAndAnswersEach(t *testing.T) {
	var batches, calls atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	b := batching.New(100, func(_ context.Context, in []int) ([]batching.Result[string], error) {
		first.Do(func() { close(started); <-release })
		batches.Add(1)
		calls.Add(int64(len(in)))
		out := make([]batching.Result[string], len(in))
		for i, v := range in {
			if v < 0 {
				return nil, errors.New("negative in batch")
			}
			if v%7 == 0 {
				out[i].Err = fmt.Errorf("%d is refused", v)
				continue
			}
			out[i].Out = fmt.Sprint("n", v)
		}
		return out, nil
	})
	errs := make(chan error, 50)
	check := func(i int) {
		got, err := b.Do(context.Background(), i)
		switch {
		case i%7 == 0 && err == nil:
			errs <- fmt.Errorf("%d: want its own error", i)
		case i%7 != 0 && (err != nil || got != fmt.Sprint("n", i)):
			errs <- fmt.Errorf("%d: got %q, %v", i, got, err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { check(1) }) // its batch holds the others back
	<-started
	for i := 2; i <= 50; i++ {
		wg.Go(func() { check(i) })
	}
	for b.Waiting() < 49 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls.Load() != 50 || batches.Load() != 2 {
		t.Fatalf("%d calls in %d batches: want 50 in 2 (the first alone, then the 49 that queued)", calls.Load(), batches.Load())
	}
	if _, err := b.Do(context.Background(), -1); err == nil || err.Error() != "negative in batch" {
		t.Fatalf("a failed batch must fail its callers: %v", err)
	}
	if b.Waiting() != 0 {
		t.Fatal("nothing is left queued")
	}
}

func TestAlignAnswersEachKey(t *testing.T) {
	missing := errors.New("not found")
	got := batching.Align([]string{"b", "x", "a"}, []string{"a!", "b!"}, func(v string) string { return v[:1] }, missing)
	if len(got) != 3 || got[0].Out != "b!" || got[0].Err != nil || got[1].Err != missing || got[2].Out != "a!" {
		t.Fatalf("got %+v", got)
	}
}
