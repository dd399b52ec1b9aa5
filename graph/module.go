package graph

import "go.uber.org/fx"

// Module provides the GraphQL adapter: the *Resolver and, named "graphql",
// the http.Handler that serves it. It needs the ports in Deps, which the
// composition root binds to the use cases, and mounts the handler itself.
var Module = fx.Module("graph",
	fx.Provide(
		NewResolver,
		fx.Annotate(NewHandler, fx.ResultTags(`name:"graphql"`)),
	),
)
