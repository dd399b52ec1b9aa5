package bootstrap

import (
	"context"
	"log/slog"
	"sync"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/graph"
)

// graphModule binds the use cases to the GraphQL adapter's ports: the
// batched reads over the store, the same send use cases REST uses, the
// live feed of message events (one reader of the event log per process,
// run for the app's lifetime) and the REST credential check for
// WebSocket connections.
var graphModule = fx.Module("graphql-deps",
	fx.Provide(
		func(db *store.DB) *messaging.Reader { return messaging.NewReader(db.Repos()) },
		newLive,
		func(a graph.AccountReader, r *messaging.Reader, m *messaging.Service, l *messaging.Live) graph.Deps {
			return graph.Deps{Accounts: a, Threads: r, Sender: m, Live: l}
		},
		func(a *accounts.Service) graph.Authenticator { return a },
		func(c Config) graph.PublicOptions { return graph.PublicOptions{Playground: !c.Production} },
	),
)

func newLive(lc fx.Lifecycle, db *store.DB, log *slog.Logger) *messaging.Live {
	live := messaging.NewLive(db, db.Repos(), messaging.LiveOptions{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			wg.Go(func() { live.Run(ctx) })
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			wg.Wait()
			return nil
		},
	})
	return live
}
