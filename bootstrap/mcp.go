package bootstrap

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/mcp"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
)

// mcpLiveBuffer is how far the MCP adapter's live subscriptions may fall
// behind. The adapter holds one per listening account and drains it at
// once, so a short buffer suffices, and a thousand waiting accounts hold
// a thousand small buffers rather than large ones.
const mcpLiveBuffer = 32

// mcpModule serves the Model Context Protocol at /mcp over the same use
// cases as REST and GraphQL, with the REST idempotency keys and the
// request deadline, and a live feed of its own.
var mcpModule = fx.Module("mcp-deps",
	fx.Provide(newMCPDeps),
	mcp.Module,
	fx.Invoke(closeMCPFirst),
)

// mcpInputs are the use cases the MCP adapter reaches; email and cron are
// optional, so that the adapter works in apps built without them.
type mcpInputs struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	DB        *store.DB
	Messaging *messaging.Service
	Threads   *messaging.Reader
	Accounts  *accounts.Service
	Keyring   *keyring.Keyring
	Email     *appemail.Service `optional:"true"`
	Cron      *appcron.Service  `optional:"true"`
	Profiles  *profiles.Service `optional:"true"`
	Logger    *slog.Logger
}

func newMCPDeps(in mcpInputs) mcp.Deps {
	live := messaging.NewLive(in.DB.EventLog(), in.DB.MessagingStore(), messaging.LiveOptions{Logger: in.Logger, Buffer: mcpLiveBuffer})
	runWhileUp(in.Lifecycle, live.Run)
	d := mcp.Deps{
		Messaging: in.Messaging, Threads: in.Threads, Live: live, Authenticator: in.Accounts,
		Idempotency: in.DB.IdempotencyKeys(), IdempotencyLock: in.Config.IdempotencyLock, CallTimeout: in.Config.Limits.RequestTimeout,
		MaxBodyBytes:   in.Config.Limits.MaxBodyBytes,
		AllowedOrigins: in.Config.MCP.AllowedOrigins, AllowedHosts: in.Config.MCP.AllowedHosts,
		Sessions: mcpsessions.NewService(in.DB.MCPSessionStore(), in.Keyring, mcpsessions.Options{
			IdleTimeout: in.Config.MCP.SessionIdleTimeout, MaxPerAccount: in.Config.MCP.MaxSessionsPerAccount,
		}),
		Version: in.Config.Version, Logger: in.Logger,
	}
	if in.Email != nil {
		d.Email = in.Email
	}
	if in.Cron != nil {
		d.Cron = in.Cron
	}
	if in.Profiles != nil {
		d.Profiles = in.Profiles
	}
	return d
}

// closeMCPFirst ends the MCP sessions when the app stops, before the HTTP
// server drains its requests: a session's event stream would otherwise
// hold the drain until its timeout. Stop hooks run in the reverse order
// of their registration, and this one is registered after the server's
// (it needs the listener).
func closeMCPFirst(lc fx.Lifecycle, _ *edge.Listener, h *mcp.Handler) {
	lc.Append(fx.StopHook(func(context.Context) { h.Close() }))
}
