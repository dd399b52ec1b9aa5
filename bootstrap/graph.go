package bootstrap

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/application/queue"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/graph"
)

// graphModule binds the use cases to the GraphQL adapter's ports: the
// batched reads over the store, the same send use cases REST uses, the
// live feed of message events (one reader of the event log per process,
// run for the app's lifetime), and the REST credential check and the
// dashboard's sessions for WebSocket connections.
var graphModule = fx.Module("graphql-deps",
	fx.Provide(
		func(db *store.DB, links *messaging.MediaLinks) *messaging.Reader {
			return messaging.NewReader(db.MessagingStore()).WithMediaLinks(links)
		},
		newLive,
		func(in graphInputs) graph.Deps {
			d := graph.Deps{Accounts: in.Accounts, Threads: in.Threads, Sender: in.Sender, Indicator: in.Sender, Contacts: in.Sender, Templates: in.Sender, Live: in.Live, Requests: in.Limiters.Accounts,
				Idempotency: in.Idempotency}
			d.Retention = in.Retention
			if in.Erasure != nil {
				d.Erasure = in.Erasure
			}
			if in.Cron != nil {
				d.Cron = in.Cron
			}
			if in.Webhooks != nil {
				d.Webhooks = in.Webhooks
			}
			if in.Email != nil {
				d.Email = in.Email
			}
			if in.Profiles != nil {
				d.Profiles = in.Profiles
			}
			d.Queue = queue.NewService(in.DB.JobQueue(), nil)
			return d
		},
		func(a *accounts.Service) graph.Authenticator { return a },
		func(c Config, l edge.Limiters, s *sessions.Service) graph.PublicOptions {
			return graph.PublicOptions{
				Playground: !c.Production, OperationTimeout: c.Limits.RequestTimeout,
				Limits:   graph.SocketLimits{AuthFailures: l.AuthFailures, Operations: l.Accounts},
				Sessions: s,
			}
		},
	),
)

// graphInputs are the use cases the GraphQL adapter reaches; cron jobs,
// webhooks and email are optional so that the adapter works in apps built
// without them (their fields then answer not_implemented).
type graphInputs struct {
	fx.In
	Accounts graph.AccountReader
	Threads  *messaging.Reader
	Sender   *messaging.Service
	Live     *messaging.Live
	Cron     *appcron.Service  `optional:"true"`
	Webhooks *webhooks.Service `optional:"true"`
	Email    *appemail.Service `optional:"true"`
	Profiles *profiles.Service `optional:"true"`
	DB       *store.DB
	Limiters edge.Limiters
	// Idempotency is the idempotency-key protocol REST's routes use too.
	Idempotency *edge.Idempotency
	// Retention is the accounts' history retention.
	Retention *accounts.Service
	// Erasure erases people.
	Erasure *erasure.Service `optional:"true"`
}

func newLive(lc fx.Lifecycle, db *store.DB, log *slog.Logger) *messaging.Live {
	live := messaging.NewLive(db.EventLog(), db.MessagingStore(), messaging.LiveOptions{Logger: log})
	runWhileUp(lc, live.Run)
	return live
}
