package graph

import (
	"context"
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/idempotency"
)

// keyedMutations honours the Idempotency-Key header on mutations sent over
// HTTP with the edge's protocol (edge.Idempotency), as REST's POST routes
// and MCP's tools do. The key's fingerprint is the operation: its query,
// operation name and variables. The same key and operation within 24
// hours answer the first response and run nothing. The same key with
// another operation, or with a REST request, is the error
// idempotency_key_reused. A response with an internal_error or unavailable
// error releases the key for a retry; any other response is the key's
// answer, recorded after the mutation's work, in a transaction of its own.
// Queries run as if they had no key.
func keyedMutations(keys *edge.Idempotency) func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		oc := graphql.GetOperationContext(ctx)
		key := oc.Headers.Get("Idempotency-Key")
		p, err := principal(ctx)
		if key == "" || oc.Operation == nil || oc.Operation.Operation != ast.Mutation || err != nil {
			return next(ctx)
		}
		fingerprint := ""
		if len(key) <= edge.MaxIdempotencyKey {
			operation, err := json.Marshal(map[string]any{"query": oc.RawQuery, "operationName": oc.OperationName, "variables": oc.Variables})
			if err != nil {
				return failed(ctx, err)
			}
			fingerprint = edge.Fingerprint("GraphQL", operation)
		}
		held, replay, err := keys.Begin(ctx, edge.HeaderWords, p.AccountID, key, fingerprint)
		if err != nil {
			return failed(ctx, err)
		}
		if replay != nil {
			var answer graphql.Response
			if err := json.Unmarshal(replay.Body, &answer); err != nil {
				return failed(ctx, err)
			}
			return graphql.OneShot(&answer)
		}
		responses := next(ctx)
		finished := false
		return func(ctx context.Context) *graphql.Response {
			res := responses(ctx)
			if res == nil || finished {
				return res
			}
			finished = true
			if serverFailed(res.Errors) {
				held.Finish(ctx, edge.ServerFailed, idempotency.Response{})
				return res
			}
			body, err := json.Marshal(res)
			if err != nil {
				held.Finish(ctx, edge.ServerFailed, idempotency.Response{})
				return res
			}
			held.Finish(ctx, edge.Answered, idempotency.Response{Status: 200, Body: body})
			return res
		}
	}
}

// failed answers an operation with err alone, presented as a resolver's
// error is.
func failed(ctx context.Context, err error) graphql.ResponseHandler {
	return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{presentError(ctx, err)}})
}

// serverFailed reports whether errs hold a failure of the server's, after
// which the key is released.
func serverFailed(errs gqlerror.List) bool {
	for _, e := range errs {
		switch e.Extensions["code"] {
		case internalCode, "unavailable":
			return true
		}
	}
	return false
}
