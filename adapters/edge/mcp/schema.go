package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// addTool offers a tool whose arguments decode into In and whose answer is
// an Out: run returns one, or the JSON of one an idempotency key kept. The
// input schema is In's, as adjust changes it (enums, ranges, defaults,
// which Go types do not say); the SDK checks arguments against it before
// run is called. The output schema is Out's or a toolError: a failed
// call's structured content must match it too, since clients check any
// structured content they get against the schema.
//
// The SDK is given the answer as an any: with a typed answer it would
// replace a failed call's structured content with the type's zero value.
func addTool[In, Out any](h *Handler, t *sdk.Tool, run func(ctx context.Context, accountID string, in In) (any, error), adjust ...func(*jsonschema.Schema)) error {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return fmt.Errorf("input schema of %s: %w", t.Name, err)
	}
	for _, a := range adjust {
		a(in)
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		return fmt.Errorf("output schema of %s: %w", t.Name, err)
	}
	t.InputSchema = in
	t.OutputSchema = &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{out, errorSchema}}
	sdk.AddTool(h.server, t, func(ctx context.Context, _ *sdk.CallToolRequest, args In) (*sdk.CallToolResult, any, error) {
		p, ok := accounts.PrincipalFrom(ctx)
		if !ok {
			return toolErrorResult(toolError{Status: "error", Code: "unauthorized", Message: "missing or invalid API credentials"}), nil, nil
		}
		answer, err := run(ctx, p.AccountID, args)
		if err != nil {
			return h.errorResult(ctx, err), nil, nil
		}
		if c, ok := answer.(withContent); ok {
			return &sdk.CallToolResult{Content: c.content}, c.answer, nil
		}
		return nil, answer, nil
	})
	return nil
}

// errorSchema is a failed call's structured content.
var errorSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[toolError](nil)
	if err != nil {
		panic(err)
	}
	return s
}()

// property is the schema of a property, by its path (media, type).
func property(s *jsonschema.Schema, path ...string) *jsonschema.Schema {
	for _, name := range path {
		next, ok := s.Properties[name]
		if !ok {
			panic("schema has no property " + name)
		}
		s = next
	}
	return s
}

// oneOf limits a string property to values.
func oneOf[T ~string](values []T, path ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := property(s, path...)
		p.Enum = make([]any, len(values))
		for i, v := range values {
			p.Enum[i] = string(v)
		}
	}
}

// between bounds an integer property.
func between(lo, hi int, path ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := property(s, path...)
		l, u := float64(lo), float64(hi)
		p.Minimum, p.Maximum = &l, &u
	}
}

// atLeastZero bounds an integer property below by 0.
func atLeastZero(path ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		zero := 0.0
		property(s, path...).Minimum = &zero
	}
}

// byDefault gives a property the value it takes when absent.
func byDefault(v any, path ...string) func(*jsonschema.Schema) {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return func(s *jsonschema.Schema) { property(s, path...).Default = raw }
}

// invalid is a validation error of one argument.
func invalid(typ, message string, path ...any) error {
	return failure.Invalid(failure.Field(typ, message, path...))
}

func ptr[T any](v T) *T { return &v }
