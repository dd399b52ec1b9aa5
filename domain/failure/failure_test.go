package failure_test

import (
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
