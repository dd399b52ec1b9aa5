package bootstrap

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/cache"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/email/smtp"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/rest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// smtpConfig reads SWITCHBOARD_SMTP_URL and SWITCHBOARD_SMTP_DKIM; ok is
// false when no relay is configured.
func (c Config) smtpConfig() (cfg smtp.Config, ok bool, err error) {
	if c.SMTPURL == "" {
		return smtp.Config{}, false, nil
	}
	if cfg, err = smtp.ParseURL(c.SMTPURL); err != nil {
		return smtp.Config{}, false, fmt.Errorf("SWITCHBOARD_SMTP_URL: %w", err)
	}
	if c.SMTPDKIM != "" {
		if cfg.DKIM, err = smtp.ParseDKIM(c.SMTPDKIM); err != nil {
			return smtp.Config{}, false, fmt.Errorf("SWITCHBOARD_SMTP_DKIM: %w", err)
		}
	}
	return cfg, true, nil
}

// newEmailSender is the SMTP relay when one is configured, else the
// sandbox mailbox (make run, tests), which keeps what would be sent.
func newEmailSender(lc fx.Lifecycle, c Config, log *slog.Logger) (appemail.Sender, error) {
	cfg, ok, err := c.smtpConfig()
	if err != nil {
		return nil, err
	}
	if !ok {
		log.Info("email goes to the sandbox mailbox; set SWITCHBOARD_SMTP_URL to send through a relay")
		return sandbox.New(log), nil
	}
	s, err := smtp.New(cfg)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(func(context.Context) error { return s.Close() }))
	log.Info("email goes through an SMTP relay", "relay", cfg.Redacted(), "dkim_domains", len(cfg.DKIM))
	return s, nil
}

// emailModule wires the email use cases: the store, the sender, the SSRF
// guard for attachments, and the delivery job kind.
var emailModule = fx.Module("email",
	fx.Provide(
		func(db *store.DB) appemail.Store {
			return db.EmailStore()
		},
		newEmailSender,
		func(c Config, db *store.DB, s appemail.Store, caches *cache.Caches, sender appemail.Sender, g *httpguard.Guard, log *slog.Logger) *appemail.Service {
			// The sandbox mailbox is also what the console lists.
			mailbox, _ := sender.(appemail.Mailbox)
			return appemail.NewService(appemail.Deps{
				Store: caches.Email(s), Committer: db, Sender: sender, Fetcher: g.NewFetcher(2 * time.Minute), URLs: g,
				ServiceDomain: c.EmailDomain, Mailbox: mailbox, Logger: log,
			})
		},
		fx.Annotate(func(s *appemail.Service) *appemail.Service { return s }, fx.As(new(rest.EmailUseCases))),
		fx.Annotate(func(s *appemail.Service) runner.Kind {
			// The timeout covers fetching a 100 MB attachment and the
			// relay's slowest answer; the lease is the runner's default,
			// renewed by its heartbeat while a delivery runs.
			return runner.Kind{Name: appemail.DeliverKind, Handler: s, Backoff: appemail.DeliveryBackoff, Timeout: 5 * time.Minute}
		}, fx.ResultTags(runner.KindGroup)),
	),
)
