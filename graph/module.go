package graph

import "go.uber.org/fx"

// Module provides the GraphQL adapter: the *Resolver; named "graphql", the
// http.Handler to mount behind the edge's authentication; and named
// "graphql-public", the handlers of WebSocket connections and the
// playground (edge.GraphQLPublic), which authenticate otherwise. It needs Deps, an
// Authenticator and PublicOptions from the composition root.
var Module = fx.Module("graph",
	fx.Provide(
		NewResolver,
		fx.Annotate(NewHandler, fx.ResultTags(`name:"graphql"`)),
		fx.Annotate(NewPublicHandler, fx.ResultTags(`name:"graphql-public"`)),
	),
)
