package bootstrap

import (
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/graph"
)

// graphModule binds the use cases to the GraphQL adapter's ports: the
// batched reads over the store, and the same send use cases REST uses.
var graphModule = fx.Module("graphql-deps",
	fx.Provide(
		func(db *store.DB) *messaging.Reader { return messaging.NewReader(db.Repos()) },
		func(a graph.AccountReader, r *messaging.Reader, m *messaging.Service) graph.Deps {
			return graph.Deps{Accounts: a, Threads: r, Sender: m}
		},
	),
)
