package graph

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/switchboard-dev/switchboard/application/accounts"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
	"github.com/switchboard-dev/switchboard/graph/generated"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// Limits of one GraphQL request.
const (
	// MaxComplexity bounds the cost of one operation: one point per field,
	// and a connection's selection counted once per requested item (first),
	// so 50 threads with their last 5 messages cost about 1,500.
	MaxComplexity = 5000
	// MaxBodyBytes bounds a request body; queries are small.
	MaxBodyBytes = 1 << 20
)

// NewHandler serves the GraphQL API over HTTP GET and POST (JSON). It expects
// the request context to carry an accounts.Principal (the edge's authentication
// middleware sets it); without one every field answers "unauthenticated".
// Errors are presented as {message, extensions: {code}} from the
// *failure.Error they carry; internal errors and panics become "internal
// server error", code "internal_error", and are logged with slog.
func NewHandler(r *Resolver) http.Handler {
	srv := newServer(r)
	if r.keys != nil {
		srv.AroundOperations(keyedMutations(r.keys))
	}
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	return http.MaxBytesHandler(srv, MaxBodyBytes)
}

// newServer is the executable schema with the extensions every transport
// shares: introspection, the expansion, complexity and depth limits, the error
// presenter and the per-response loaders.
func newServer(r *Resolver) *handler.Server {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r, Complexity: complexity()}))
	srv.Use(extension.Introspection{})
	// The expansion bound first: the checks after it walk the expansion.
	srv.Use(expansionBound{})
	srv.Use(extension.FixedComplexityLimit(MaxComplexity))
	srv.Use(depthLimit{max: MaxDepth})
	srv.Use(operationBounds{})
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	if r.requests != nil {
		chargeMutationFields(srv, r.requests)
	}
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		if p, ok := accounts.PrincipalFrom(ctx); ok {
			ctx = withLoaders(ctx, newLoaders(p.AccountID, r.threads, r.cron, r.email))
		}
		return next(ctx)
	})
	return srv
}

// complexity counts a connection's selection once per item it may return.
func complexity() generated.ComplexityRoot {
	var c generated.ComplexityRoot
	c.Query.Threads = func(child int, _ *model.ThreadFilter, first *int, _ *string) int {
		return 1 + child*appmessaging.ClampPage(intOr(first, appmessaging.DefaultPageSize))
	}
	c.Thread.Messages = func(child int, first *int, _ *string) int {
		return 1 + child*appmessaging.ClampPage(intOr(first, appmessaging.DefaultPageSize))
	}
	// A transcript is one field, but a line per message.
	c.Thread.Transcript = func(child int, first *int, _ *string) int {
		return 1 + child + appmessaging.ClampPage(intOr(first, appmessaging.DefaultPageSize))
	}
	c.Query.CronJobs = func(child int, _ *cron.Status, first *int, _ *string) int {
		return 1 + child*clampedFirst(first)
	}
	c.CronJob.Executions = func(child int, _ *cron.ExecutionStatus, first *int, _ *string) int {
		return 1 + child*clampedFirst(first)
	}
	c.Query.WebhookDeliveries = func(child int, _ *webhook.Status, first *int, _ *string) int {
		return 1 + child*clampedFirst(first)
	}
	return c
}

// mutationFields counts the top-level fields of one mutation as they run
// (serially, as the spec runs a mutation's fields).
type mutationFields struct{ ran int }

type mutationFieldsKey struct{}

// chargeMutationFields makes every top-level field of a mutation after
// the first spend one request token of the account; a field past the
// budget answers rate_limited and does nothing. One request then buys the
// work of one REST request per token, however many fields it holds.
func chargeMutationFields(srv *handler.Server, budget RequestBudget) {
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		if op := graphql.GetOperationContext(ctx).Operation; op != nil && op.Operation == ast.Mutation {
			ctx = context.WithValue(ctx, mutationFieldsKey{}, &mutationFields{})
		}
		return next(ctx)
	})
	srv.AroundRootFields(func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		fields, ok := ctx.Value(mutationFieldsKey{}).(*mutationFields)
		if !ok {
			return next(ctx)
		}
		if fields.ran++; fields.ran == 1 {
			return next(ctx)
		}
		if p, err := principal(ctx); err == nil {
			if q := budget.Take(ctx, p.AccountID); !q.Admitted() {
				graphql.AddError(ctx, failure.RateLimited("rate limit exceeded for this account", q.RetryAfter))
				return graphql.Null
			}
		}
		return next(ctx)
	})
}
