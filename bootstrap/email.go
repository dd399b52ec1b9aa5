package bootstrap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/email/listener"
	"github.com/switchboard-dev/switchboard/adapters/email/mailauth"
	"github.com/switchboard-dev/switchboard/adapters/email/mailparse"

	"github.com/switchboard-dev/switchboard/adapters/cache"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/email/smtp"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
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

// ErrSandboxInProduction refuses --production without a relay unless the
// sandbox mailbox is asked for: emails would be kept, never sent.
var ErrSandboxInProduction = errors.New("--production needs an SMTP relay, or emails are kept in the sandbox mailbox and never sent: " +
	"set SWITCHBOARD_SMTP_URL (--smtp-url) to send them, or set SWITCHBOARD_SANDBOX_EMAIL=1 (--sandbox-email) to keep them in the sandbox mailbox on purpose")

// checkEmail validates the email settings: the relay's, or the sandbox
// mailbox's, which --production takes only when asked for explicitly.
func (c Config) checkEmail() error {
	_, relay, err := c.smtpConfig()
	switch {
	case err != nil:
		return err
	case relay && c.SandboxEmail:
		return errors.New("SWITCHBOARD_SANDBOX_EMAIL (--sandbox-email) keeps emails instead of sending them through SWITCHBOARD_SMTP_URL (--smtp-url): set one of them, not both")
	case relay:
		return nil
	case c.Production && !c.SandboxEmail:
		return ErrSandboxInProduction
	}
	if err := c.Mailbox.Check(); err != nil {
		return fmt.Errorf("sandbox mailbox: %w", err)
	}
	return nil
}

// newEmailSender is the SMTP relay when one is configured, else the
// sandbox sender (make run, tests), which keeps what would be sent in the
// sandbox mailbox in the database.
func newEmailSender(lc fx.Lifecycle, c Config, db *store.DB, log *slog.Logger) (appemail.Sender, error) {
	cfg, ok, err := c.smtpConfig()
	if err != nil {
		return nil, err
	}
	if !ok {
		m := c.Mailbox
		log.Info("email goes to the sandbox mailbox; set SWITCHBOARD_SMTP_URL to send through a relay",
			"account_emails", m.AccountEmails, "account_bytes", m.AccountBytes, "total_emails", m.TotalEmails, "total_bytes", m.TotalBytes, "body_bytes", m.BodyBytes)
		return sandbox.New(db.MailboxStore(), m, log), nil
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
		func(c Config, db *store.DB, s appemail.Store, caches *cache.Caches, sender appemail.Sender, g *httpguard.Guard, log *slog.Logger, dns mailauth.Resolver) *appemail.Service {
			// Without a relay, the console lists the sandbox mailbox.
			var mailbox appemail.Mailbox
			if c.SMTPURL == "" {
				mailbox = db.MailboxStore()
			}
			return appemail.NewService(appemail.Deps{
				Store: caches.Email(s), Committer: db, Sender: sender, Fetcher: g.NewFetcher(2 * time.Minute), URLs: g,
				ServiceDomain: c.EmailDomain, Mailbox: mailbox, Logger: log,
				Inbox: db.InboxStore(), Parser: mailparse.New(mailparse.DefaultLimits), Authenticator: mailauth.New(dns, 20*time.Second),
				InboundLimits: c.SMTP.Inbound, Composer: smtp.Composer{},
			})
		},
		// The DNS the SPF, DKIM and DMARC checks ask: the system's, or
		// the server SWITCHBOARD_SMTP_DNS names.
		func(c Config) mailauth.Resolver { return dnsResolver(c.SMTP.DNS) },
		fx.Annotate(func(s *appemail.Service) *appemail.Service { return s }, fx.As(new(rest.EmailUseCases))),
		fx.Annotate(func(s *appemail.Service) runner.Kind {
			// The timeout covers fetching a 100 MB attachment and the
			// relay's slowest answer; the lease is the runner's default,
			// renewed by its heartbeat while a delivery runs.
			return runner.Kind{Name: appemail.DeliverKind, Handler: s, Backoff: appemail.DeliveryBackoff, Timeout: 5 * time.Minute}
		}, fx.ResultTags(runner.KindGroup)),
		fx.Annotate(func(s *appemail.Service) runner.Kind {
			// Parsing is bounded by the message size; the timeout covers
			// the DNS lookups of SPF, DKIM and DMARC.
			return runner.Kind{Name: appemail.ReceiveKind, Handler: runner.HandlerFunc(s.Receive), Timeout: 2 * time.Minute}
		}, fx.ResultTags(runner.KindGroup)),
	),
	fx.Invoke(startSMTPListener),
)

// startSMTPListener starts the SMTP listener that receives email when
// SWITCHBOARD_SMTP_LISTEN is set, and stops it with the app.
func startSMTPListener(lc fx.Lifecycle, c Config, s *appemail.Service, db *store.DB, log *slog.Logger) error {
	if c.SMTP.Listen == "" {
		return nil
	}
	cfg := listener.Config{
		Addr: c.SMTP.Listen, Hostname: c.SMTPHostname(), MaxMessageBytes: c.SMTP.MaxMessageBytes, MaxConnections: c.SMTP.MaxConnections,
	}
	certFile, keyFile := c.SMTP.TLSCertFile, c.SMTP.TLSKeyFile
	if certFile == "" {
		certFile, keyFile = c.TLSCertFile, c.TLSKeyFile
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("load SMTP TLS certificate: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var buckets ratelimit.Buckets = ratelimit.NewMemoryBuckets()
	if db.Dialect() == store.Postgres {
		buckets = db.RateBuckets()
	}
	n := c.SMTP.SenderPerMinute
	senders := ratelimit.New(ratelimit.Policy{Name: "smtp-sender", PerSecond: float64(n) / 60, Burst: max(n, 1)}, buckets, ratelimit.Options{Prefix: "smtp:", Logger: log})
	limit := func(ctx context.Context, sender string) bool { return senders.Take(ctx, sender).Admitted() }
	var l *listener.Listener
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			var err error
			if l, err = listener.Listen(cfg, s, limit, log); err != nil {
				return err
			}
			log.Info("receiving email over SMTP", "addr", l.Addr().String(), "hostname", cfg.Hostname, "starttls", cfg.TLS != nil,
				"max_message_bytes", cfg.MaxMessageBytes)
			return nil
		},
		OnStop: func(ctx context.Context) error { return l.Shutdown(ctx) },
	})
	return nil
}

// SMTPHostname is the name the SMTP listener greets with and domains
// publish as their MX host: SWITCHBOARD_SMTP_HOSTNAME, else the public
// URL's host, else the service email domain.
func (c Config) SMTPHostname() string {
	if c.SMTP.Hostname != "" {
		return c.SMTP.Hostname
	}
	if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return c.EmailDomain
}

// dnsResolver is the resolver that asks the DNS server at addr (host:port)
// over UDP and TCP as a query needs; the system's when addr is empty.
func dnsResolver(addr string) *net.Resolver {
	if addr == "" {
		return net.DefaultResolver
	}
	var d net.Dialer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
}
