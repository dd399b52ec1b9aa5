package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// errUnauthenticated is returned by resolvers of requests that carry no
// principal. The composition root mounts the handler behind the REST
// authentication middleware, so in practice this means a wiring mistake.
var errUnauthenticated = &failure.Error{
	Kind:    failure.KindUnauthenticated,
	Code:    "unauthenticated",
	Message: "authentication required",
}

// principal returns who the request acts as, or errUnauthenticated.
func principal(ctx context.Context) (accounts.Principal, error) {
	p, ok := accounts.PrincipalFrom(ctx)
	if !ok {
		return accounts.Principal{}, errUnauthenticated
	}
	return p, nil
}

// presentError turns an error into a GraphQL error. An error carrying a
// *failure.Error shows its Message, with its Code in extensions.code.
// Internal errors (and every other error a resolver returns) are logged and
// shown only as "internal server error", code "internal_error". Errors that
// gqlgen or gqlparser raise themselves (parse, validation, complexity) are the
// client's to fix and are shown as they are.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	// gqlgen hands over every error wrapped in a *gqlerror.Error that holds
	// the path and locations; keep those, replace message and extensions.
	out := graphql.DefaultErrorPresenter(ctx, err)
	if out == nil {
		return nil
	}
	fe, ok := errors.AsType[*failure.Error](err)
	if !ok {
		if raisedByGraphQL(err) {
			return out
		}
		fe = failure.As(err)
	}
	presented := *out
	presented.Message = fe.Message
	presented.Extensions = map[string]any{"code": fe.Code}
	if len(fe.Fields) > 0 {
		presented.Extensions["fields"] = presentFields(fe.Fields)
	}
	for name, value := range fe.Details {
		presented.Extensions[camelCase(name)] = value
	}
	if fe.RetryAfter > 0 {
		// Seconds, rounded up, as REST's Retry-After header says it.
		presented.Extensions["retryAfter"] = int(math.Ceil(fe.RetryAfter.Seconds()))
	}
	if fe.Kind == failure.KindInternal {
		cause := error(out)
		if c := out.Unwrap(); c != nil {
			cause = c
		}
		slog.ErrorContext(ctx, "graphql internal error", "path", out.Path.String(), "err", cause)
		presented.Message = internalMessage
		presented.Extensions["code"] = internalCode
	}
	return &presented
}

// camelCase names a failure's detail as GraphQL names fields:
// window_closed_at is windowClosedAt.
func camelCase(snake string) string {
	parts := strings.Split(snake, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// raisedByGraphQL reports whether err was built by gqlgen or gqlparser (its
// root cause is a *gqlerror.Error) rather than returned by a resolver (gqlgen
// wraps those, so their root cause is the resolver's own error).
func raisedByGraphQL(err error) bool {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			_, ok := err.(*gqlerror.Error)
			return ok
		}
		err = next
	}
}

// What clients see of an internal error (the same as failure.As gives a
// plain error).
const (
	internalMessage = "internal server error"
	internalCode    = "internal_error"
)

// recoverPanic turns a panic in a resolver into an internal error; the stack
// goes to the log through presentError, never to the client.
func recoverPanic(_ context.Context, v any) error {
	return &failure.Error{
		Kind:    failure.KindInternal,
		Code:    internalCode,
		Message: internalMessage,
		Err:     fmt.Errorf("panic: %v\n%s", v, debug.Stack()),
	}
}

// presentFields lists the broken rules of a validation error:
// {path, message, type}, the path naming the input field (["media", "url"]).
func presentFields(fields []failure.FieldError) []map[string]any {
	out := make([]map[string]any, len(fields))
	for i, f := range fields {
		path := f.Path
		if path == nil {
			path = []any{}
		}
		out[i] = map[string]any{"path": path, "message": f.Message, "type": f.Type}
	}
	return out
}
