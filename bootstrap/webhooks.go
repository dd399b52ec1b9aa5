package bootstrap

import (
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	whsender "github.com/switchboard-dev/switchboard/adapters/webhooks"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// webhooksModule provides the webhook use cases: their store, the signed
// sender on the SSRF-safe client.
var webhooksModule = fx.Module("webhooks",
	fx.Provide(func(in webhooksIn) *webhooks.Service {
		var media webhooks.MediaReader
		if in.Media != nil {
			// Serving: deliveries inline the media endpoints ask for.
			media = in.Media
		}
		return NewWebhooksWith(in.Config, in.DB, in.Keyring, in.Guard, in.Log, media, in.Accounts)
	}),
)

// webhooksServing adds what serving needs: the delivery job kind, the
// REST routes, and the fan-out (webhooks.FanOut), which the store's
// committer is built with, so every event committed gets its deliveries in
// the same commit.
var webhooksServing = fx.Options(
	fx.Provide(fx.Annotate(func(s *webhooks.Service) runner.Kind {
		return runner.Kind{
			Name: webhooks.DeliverKind, Handler: s, Timeout: webhook.Timeout + 30*time.Second,
			// One delivery of a thread at a time per runner keeps the
			// thread's events in order without waiting: a second one goes
			// back to the queue keeping its place, and claims leave the
			// thread out until the first ends.
			PaceFor: func(string) runner.Pace { return runner.Pace{MaxConcurrent: 1} },
		}
	}, fx.ResultTags(runner.KindGroup))),
	fx.Provide(func() store.ReactingOn {
		fanOut := webhooks.NewFanOut(nil)
		return func(c *store.Conn) writes.Reactions { return fanOut.Through(store.WebhookStore{Conn: c}) }
	}),
	fx.Decorate(func(d rest.Deps, s *webhooks.Service) rest.Deps {
		d.Webhooks = s
		return d
	}),
)

// webhooksIn are what the webhook use cases are built from; Media, the
// messaging use cases, is there when serving (operator commands deliver
// nothing).
type webhooksIn struct {
	fx.In
	Config  Config
	DB      *store.DB
	Keyring *keyring.Keyring
	Guard   *httpguard.Guard
	Log     *slog.Logger
	Media   *messaging.Service `optional:"true"`
	// Accounts say how long each account's history is kept.
	Accounts *accounts.Service
}

// NewWebhooks builds the webhook use cases.
func NewWebhooks(c Config, db *store.DB, k *keyring.Keyring, g *httpguard.Guard, log *slog.Logger) *webhooks.Service {
	return NewWebhooksWith(c, db, k, g, log, nil, nil)
}

// NewWebhooksWith builds the webhook use cases, reading the media that
// endpoints ask to have inlined through media (none when nil) and
// accounts' history retention through retention (none when nil).
func NewWebhooksWith(c Config, db *store.DB, k *keyring.Keyring, g *httpguard.Guard, log *slog.Logger, media webhooks.MediaReader, retention webhooks.HistoryRetention) *webhooks.Service {
	return webhooks.NewService(webhooks.Deps{
		Media:            media,
		Retention:        retention,
		Store:            db.WebhookStore(),
		Batched:          db.Batched(),
		Keys:             k,
		URLs:             g,
		PlainHTTPAllowed: plainHTTPAllowed(c.AllowPrivateURLs),
		Sender:           whsender.NewSender(g.DialContext, nil),
		Logger:           log,
	})
}

// plainHTTPAllowed lets a webhook use plain http only for hosts in the
// operator's allowed private ranges: IP literals in them, and localhost
// when loopback is allowed.
func plainHTTPAllowed(allow []netip.Prefix) func(host string) bool {
	return func(host string) bool {
		h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		var ip netip.Addr
		if strings.EqualFold(h, "localhost") {
			ip = netip.MustParseAddr("127.0.0.1")
		} else if a, err := netip.ParseAddr(h); err == nil {
			ip = a.Unmap()
		} else {
			return false
		}
		for _, p := range allow {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
}
