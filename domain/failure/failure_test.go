package failure_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

func TestAsFindsWrappedFailures(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("create thing: %w", failure.NotFound("thing"))
	if got := failure.As(wrapped); got.Kind != failure.KindNotFound || got.Code != "not_found" {
		t.Fatalf("As = %+v", got)
	}
	if !failure.Is(wrapped, failure.KindNotFound) || failure.Is(wrapped, failure.KindConflict) {
		t.Fatal("Is must match the kind in the chain only")
	}
	plain := errors.New("disk on fire")
	if got := failure.As(plain); got.Kind != failure.KindInternal || !errors.Is(got, plain) {
		t.Fatalf("a plain error is internal and keeps its cause, got %+v", got)
	}
}

func TestProblemsCollectsEveryField(t *testing.T) {
	t.Parallel()
	var p failure.Problems
	if p.Err() != nil {
		t.Fatal("no problems, no error")
	}
	p.Add("missing", "Field required", "to")
	p.Add("enum", "bad service", "service")
	err := failure.As(p.Err())
	if err.Kind != failure.KindInvalid || len(err.Fields) != 2 || err.Fields[1].Path[0] != "service" || err.Fields[0].In != "body" {
		t.Fatalf("got %+v", err)
	}
}

// A request out of time or cancelled is unavailable (503 with Retry-After),
// not a bug of the server's (500), whatever wrapped it.
func TestAsTreatsEndedContextsAsUnavailable(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{context.DeadlineExceeded, context.Canceled} {
		got := failure.As(fmt.Errorf("read account: %w", cause))
		if got.Kind != failure.KindUnavailable || got.Code != "unavailable" || got.RetryAfter <= 0 || !errors.Is(got, cause) {
			t.Fatalf("As(%v) = %+v", cause, got)
		}
	}
	if failure.Is(context.DeadlineExceeded, failure.KindUnavailable) {
		t.Fatal("Is reports only kinds carried in the chain")
	}
}
