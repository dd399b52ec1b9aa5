package bootstrap

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/dashboard"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
)

// sessionsModule binds the store and the account use cases to the
// session use cases, and those to the dashboard's ports: its sign-in
// shares the APIs' failed-authentication budget (the REST limiters, in
// the database on Postgres). The same sessions let /v1, /graphql and the
// GraphQL WebSocket accept the session cookie (newRESTDeps, graphModule).
var sessionsModule = fx.Module("sessions",
	fx.Provide(
		func(c Config, db *store.DB, a *accounts.Service, k *keyring.Keyring) *sessions.Service {
			return sessions.NewService(db.SessionStore(), a, k, sessions.Options{IdleTimeout: c.SessionIdleTimeout, MaxAge: c.SessionMaxAge})
		},
		func(k *keyring.Keyring) edge.CSRF { return edge.NewCSRF(k) },
		func(c Config, s *sessions.Service, csrf edge.CSRF, a *accounts.Service, l edge.Limiters, log *slog.Logger) dashboard.Deps {
			return dashboard.Deps{
				Sessions: s, CSRF: csrf, Accounts: a, AuthFailures: l.AuthFailures,
				TrustedProxies: c.Limits.TrustedProxies, Logger: log,
			}
		},
	),
)
