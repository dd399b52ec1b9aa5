package graph

import (
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/switchboard-dev/switchboard/graph/generated"
)

// Limits of one GraphQL request.
const (
	// MaxComplexity bounds the cost of one operation (one point per field,
	// gqlgen's default estimate).
	MaxComplexity = 200
	// MaxBodyBytes bounds a request body; queries are small.
	MaxBodyBytes = 1 << 20
)

// NewHandler serves the GraphQL API over HTTP GET and POST (JSON). It expects
// the request context to carry an accounts.Principal (the REST authentication
// middleware sets it); without one every field answers "unauthenticated".
// Errors are presented as {message, extensions: {code}} from the
// *failure.Error they carry; internal errors and panics become "internal
// server error", code "internal_error", and are logged with slog.
func NewHandler(r *Resolver) http.Handler {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r}))
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.Use(extension.Introspection{})
	srv.Use(extension.FixedComplexityLimit(MaxComplexity))
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	return http.MaxBytesHandler(srv, MaxBodyBytes)
}
