package bootstrap

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// channelsModule wires the real providers: the Telegram Bot API and the
// WhatsApp Cloud API, their inbound webhooks, and the Telegram connector
// (webhook set-up, and getUpdates pollers under poll leases) for the
// app's lifetime.
var channelsModule = fx.Module("channels",
	fx.Provide(
		func(db *store.DB) channels.Store {
			return db.ChannelStore()
		},
		func(db *store.DB) channels.PollLeases {
			return db.PollLeases()
		},
		channels.NewDirectory,
		func() *telegram.Client { return telegram.NewClient() },
		func() *whatsapp.Client { return whatsapp.NewClient() },
		func(c *telegram.Client, d *channels.Directory, g *httpguard.Guard) *telegram.Provider {
			return &telegram.Provider{Client: c, Chats: d, Media: g.Client(httpguard.ClientOptions{Timeout: 30 * time.Second})}
		},
		func(c *whatsapp.Client, d *channels.Directory) *whatsapp.Provider {
			return &whatsapp.Provider{Client: c, Chats: d}
		},
		func(s channels.Store, m *messaging.Service, a *accounts.Service, log *slog.Logger) *channels.Service {
			return channels.NewService(channels.Deps{Store: s, Receiver: m, Opener: a, Logger: log})
		},
		func(d *channels.Directory, a *accounts.Service) numberSource { return numberSource{d, a} },
		func(s *channels.Service) *telegram.Inbound { return &telegram.Inbound{Inbox: s} },
		func(s *channels.Service, n numberSource, c *whatsapp.Client) *whatsapp.Inbound {
			return &whatsapp.Inbound{Inbox: s, Siblings: n, Client: c}
		},
		fx.Annotate(func(t *telegram.Inbound, w *whatsapp.Inbound) providerWebhooks {
			return providerWebhooks{telegram: t, whatsapp: w}
		}, fx.As(new(rest.ProviderWebhooks))),
	),
	fx.Invoke(func(lc fx.Lifecycle, c Config, client *telegram.Client, in *telegram.Inbound, n numberSource, leases channels.PollLeases, log *slog.Logger) {
		conn := &telegram.Connector{
			Client: client, Inbound: in, Numbers: n, PublicURL: c.PublicURL, Polling: c.TelegramPolling, Leases: leases, Log: log,
		}
		lc.Append(fx.Hook{OnStart: conn.Start, OnStop: conn.Stop})
	}),
	fx.Invoke(pruneUpdates),
)

// pruneUpdates forgets handled provider updates after three days, hourly:
// Telegram redelivers an update for at most a day.
func pruneUpdates(lc fx.Lifecycle, db *store.DB, log *slog.Logger) {
	runWhileUp(lc, func(ctx context.Context) {
		for {
			if _, err := db.ChannelStore().PruneUpdates(ctx, time.Now().Add(-72*time.Hour)); err != nil && ctx.Err() == nil {
				log.Warn("prune provider updates", "error", err.Error())
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Hour):
			}
		}
	})
}

// numberSource lists a provider's numbers with their opened settings.
type numberSource struct {
	dir      *channels.Directory
	accounts *accounts.Service
}

func (n numberSource) Numbers(ctx context.Context, p account.Provider) ([]account.Number, error) {
	return n.dir.Numbers(ctx, p)
}

func (n numberSource) NumberSettings(num account.Number) (map[string]string, error) {
	return n.accounts.NumberSettings(num)
}

// providerWebhooks serves the inbound provider routes.
type providerWebhooks struct {
	telegram *telegram.Inbound
	whatsapp *whatsapp.Inbound
}

func (p providerWebhooks) TelegramWebhook(ctx context.Context, numberID, secret string, body []byte) (rest.VerifiedPost, error) {
	return verified(p.telegram.Authenticate(ctx, numberID, secret, body))
}

func (p providerWebhooks) WhatsAppVerify(ctx context.Context, numberID, mode, token, challenge string) (string, error) {
	return p.whatsapp.Verify(ctx, numberID, mode, token, challenge)
}

func (p providerWebhooks) WhatsAppWebhook(ctx context.Context, numberID, signature string, body []byte) (rest.VerifiedPost, error) {
	return verified(p.whatsapp.Authenticate(ctx, numberID, signature, body))
}

// verified keeps a failed check's nil post out of the interface.
func verified[P rest.VerifiedPost](post P, err error) (rest.VerifiedPost, error) {
	if err != nil {
		return nil, err
	}
	return post, nil
}
