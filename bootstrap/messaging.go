package bootstrap

import (
	"github.com/switchboard-dev/switchboard/adapters/emoji"
	"log/slog"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/cache"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// Provider limits per agent number, from the providers' published limits:
// WhatsApp Cloud API 80 messages/s per number, Telegram Bot API 30/s per bot.
var channelPace = map[account.Service]runner.Pace{
	account.WhatsApp: {PerSecond: 80, Burst: 80, MaxConcurrent: 32},
	account.Telegram: {PerSecond: 30, Burst: 30, MaxConcurrent: 16},
}

// deliveryLease is how long a message delivery is leased to a worker
// between heartbeats: with the runner's rescue interval, a delivery whose
// process died is back in the queue within 15 s.
const deliveryLease = 10 * time.Second

// deliveryPace picks the limit from the pace key's service prefix.
func deliveryPace(key string) runner.Pace {
	service, _, _ := strings.Cut(key, ":")
	return channelPace[account.Service(service)]
}

// messagingModule wires the messaging use cases: the store, the channel
// providers, the SSRF guard for media, and the delivery job kind.
var messagingModule = fx.Module("messaging",
	fx.Provide(
		func(db *store.DB) messaging.Store {
			return db.MessagingStore()
		},
		func(tg *telegram.Provider, wa *whatsapp.Provider, g *httpguard.Guard) messaging.Providers {
			sb := sandbox.Provider{Media: g.Client(httpguard.ClientOptions{Timeout: 30 * time.Second, FollowRedirects: true})}
			return messaging.ProviderSet{sandbox.Name: sb, telegram.Name: tg, whatsapp.Name: wa}
		},
		func(c Config, k *keyring.Keyring) *messaging.MediaLinks {
			return messaging.NewMediaLinks(k, c.BaseURL(), c.MediaLinkLifetime)
		},
		func(links *messaging.MediaLinks, db *store.DB, s messaging.Store, caches *cache.Caches, p messaging.Providers, a *accounts.Service, g *httpguard.Guard, d *channels.Directory, log *slog.Logger) *messaging.Service {
			return messaging.NewService(messaging.Deps{
				MediaLinks: links,
				Store:      caches.Messaging(s), Committer: db, Batched: db.Batched(), Providers: p, Opener: a, URLs: g, Media: g.NewProber(30 * time.Second), Logger: log,
				Recipients: d,
				// Typing windows are kept in the database's rate buckets,
				// so that they hold across replicas.
				Throttle:  ratelimit.NewSpacing(db.RateBuckets()),
				Emoji:     emoji.Check{},
				Graphemes: emoji.Check{},
			})
		},
		fx.Annotate(func(s *messaging.Service) *messaging.Service { return s }, fx.As(new(rest.MessagingUseCases))),
		fx.Annotate(func(s *messaging.Service) runner.Kind {
			// A short lease: a delivery of a dead process is sent again
			// within 15 s (the lease and a rescue interval).
			return runner.Kind{
				Name: messaging.DeliverKind, Handler: s, Backoff: messaging.DeliveryBackoff,
				Timeout: time.Minute, Lease: deliveryLease, PaceFor: deliveryPace,
			}
		}, fx.ResultTags(runner.KindGroup)),
		fx.Annotate(func(s *messaging.Service) runner.Kind {
			// Acknowledgements (Telegram's answers to button presses)
			// share the deliveries' pace and lease.
			return runner.Kind{
				Name: messaging.AcknowledgeKind, Handler: s.Acknowledgements(), Backoff: messaging.DeliveryBackoff,
				Timeout: time.Minute, Lease: deliveryLease, PaceFor: deliveryPace,
			}
		}, fx.ResultTags(runner.KindGroup)),
		fx.Annotate(func(s *messaging.Service) runner.Kind {
			// The agent's reactions share the deliveries' pace and lease.
			return runner.Kind{
				Name: messaging.ReactKind, Handler: s.Reactions(), Backoff: messaging.DeliveryBackoff,
				Timeout: time.Minute, Lease: deliveryLease, PaceFor: deliveryPace,
			}
		}, fx.ResultTags(runner.KindGroup)),
	),
)
