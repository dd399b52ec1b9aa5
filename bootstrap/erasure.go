package bootstrap

import (
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/cache"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/graph"
)

// erasureModule builds the erasure of people over the store, through the
// caches (which forget what an erasure deletes); serve, GraphQL and the
// operator's CLI share it.
var erasureModule = fx.Module("erasure",
	fx.Provide(
		func(db *store.DB, caches *cache.Caches, k *keyring.Keyring) *erasure.Service {
			return erasure.New(caches.Erasure(db.ErasureStore()), k, nil)
		},
		fx.Annotate(func(s *erasure.Service) *erasure.Service { return s }, fx.As(new(rest.ErasureUseCases)), fx.As(new(graph.ErasureUseCases))),
	),
)
