package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// lookupEnv is os.LookupEnv; a variable so the flag tests can fake the
// environment.
var lookupEnv = os.LookupEnv

func newServeCommand(s *settings) *cobra.Command {
	var (
		demo      bool
		debugAddr string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API (migrates the database first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if debugAddr != "" {
				stop, _, err := serveDebug(debugAddr)
				if err != nil {
					return err
				}
				defer stop()
			}
			return serve(cmd.Context(), s, demo, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.cfg.Addr, "addr", s.cfg.Addr, "address to listen on")
	f.StringVar(&s.cfg.TLSCertFile, "tls-cert-file", "", "PEM certificate file; with --tls-key-file the server speaks HTTPS itself")
	f.StringVar(&s.cfg.TLSKeyFile, "tls-key-file", "", "PEM private key file")
	f.StringVar(&s.cfg.EmailDomain, "email-domain", s.cfg.EmailDomain, "the service's own email domain")
	secretVar(f, &s.cfg.SMTPURL, "smtp-url", "SMTP relay for email, smtp://user:pass@host:port?tls=starttls|implicit|none (empty: the sandbox mailbox)")
	f.StringVar(&s.cfg.SMTPDKIM, "smtp-dkim", "", "DKIM keys for email, comma-separated domain=selector:keyfile")
	f.BoolVar(&s.cfg.SandboxEmail, "sandbox-email", false, "keep email in the sandbox mailbox instead of sending it, also with --production (which refuses to start without --smtp-url otherwise)")
	f.IntVar(&s.cfg.Mailbox.AccountEmails, "sandbox-account-emails", s.cfg.Mailbox.AccountEmails, "emails the sandbox mailbox keeps per account (its oldest go first)")
	f.Int64Var(&s.cfg.Mailbox.AccountBytes, "sandbox-account-bytes", s.cfg.Mailbox.AccountBytes, "bytes of text the sandbox mailbox keeps per account (its oldest go first)")
	f.IntVar(&s.cfg.Mailbox.TotalEmails, "sandbox-total-emails", s.cfg.Mailbox.TotalEmails, "emails the sandbox mailbox keeps in all (beyond, the account holding the most loses its oldest)")
	f.Int64Var(&s.cfg.Mailbox.TotalBytes, "sandbox-total-bytes", s.cfg.Mailbox.TotalBytes, "bytes of text the sandbox mailbox keeps in all (beyond, the account holding the most loses its oldest)")
	f.IntVar(&s.cfg.Mailbox.BodyBytes, "sandbox-body-bytes", s.cfg.Mailbox.BodyBytes, "longest text or HTML part the sandbox mailbox keeps of an email; longer ones are cut with a marker")
	f.StringVar(&s.cfg.SMTP.Listen, "smtp-listen", "", "address the SMTP listener receiving email listens on (:25); empty: email is not received")
	f.StringVar(&s.cfg.SMTP.Hostname, "smtp-hostname", "", "name the SMTP listener greets with and domains publish as MX (default: the --public-url host, else --email-domain)")
	f.StringVar(&s.cfg.SMTP.TLSCertFile, "smtp-tls-cert-file", "", "PEM certificate the SMTP listener offers with STARTTLS (default: --tls-cert-file)")
	f.StringVar(&s.cfg.SMTP.TLSKeyFile, "smtp-tls-key-file", "", "PEM private key of --smtp-tls-cert-file")
	f.Int64Var(&s.cfg.SMTP.MaxMessageBytes, "smtp-max-message-bytes", s.cfg.SMTP.MaxMessageBytes, "largest message the SMTP listener accepts (552 past it)")
	f.IntVar(&s.cfg.SMTP.MaxConnections, "smtp-max-connections", s.cfg.SMTP.MaxConnections, "SMTP connections served at once (memory is bounded by this times --smtp-max-message-bytes)")
	f.StringVar(&s.cfg.SMTP.DNS, "smtp-dns", "", "host:port of the DNS server the SPF, DKIM and DMARC checks of received email ask (default: the system's resolver)")
	f.IntVar(&s.cfg.SMTP.SenderPerMinute, "smtp-sender-rate", s.cfg.SMTP.SenderPerMinute, "messages one envelope sender may deliver per minute (450 past it; 0: no bound)")
	f.Int64Var(&s.cfg.SMTP.Inbound.AttachmentBytesPerEmail, "inbound-attachment-bytes-per-email", s.cfg.SMTP.Inbound.AttachmentBytesPerEmail, "attachment content kept of one received email (past it, only name, type, size and digest)")
	f.Int64Var(&s.cfg.SMTP.Inbound.AttachmentBytesPerAccount, "inbound-attachment-bytes-per-account", s.cfg.SMTP.Inbound.AttachmentBytesPerAccount, "attachment content kept of an account's received email in all")
	f.StringVar(&s.allowPrivateURLs, "allow-private-urls", "", "comma-separated CIDR ranges customer URLs may point into (self-hosted setups)")
	f.Float64Var(&s.cfg.Limits.RatePerSecond, "rate-limit", s.cfg.Limits.RatePerSecond, "requests per second per account (0 disables)")
	f.IntVar(&s.cfg.Limits.RateBurst, "rate-burst", s.cfg.Limits.RateBurst, "burst above the per-account rate")
	f.IntVar(&s.cfg.Limits.AuthFailuresPerMinute, "auth-failures-per-minute", s.cfg.Limits.AuthFailuresPerMinute, "failed authentications allowed per client address per minute (0 disables)")
	f.IntVar(&s.cfg.Limits.AuthFailuresIPv6Prefix, "auth-failures-ipv6-prefix", s.cfg.Limits.AuthFailuresIPv6Prefix, "leading bits of an IPv6 client address that count as one client for --auth-failures-per-minute (IPv4 addresses count one by one)")
	f.StringVar(&s.trustedProxies, "trusted-proxies", "", "comma-separated CIDR ranges of reverse proxies whose X-Forwarded-For gives the client address (per-address limits, request log); empty: the peer address")
	f.StringVar(&s.mcpOrigins, "mcp-allowed-origins", "", "comma-separated browser origins (https://app.example.com) whose requests /mcp serves; a request with any other Origin header is refused (empty: every request with an Origin)")
	f.StringVar(&s.mcpHosts, "mcp-allowed-hosts", "", "comma-separated host names a request to /mcp over a loopback connection may carry in Host beside localhost and loopback addresses (a TLS proxy on this host that passes the public name on)")
	f.IntVar(&s.cfg.MCP.MaxSessionsPerAccount, "mcp-max-sessions-per-account", s.cfg.MCP.MaxSessionsPerAccount, "MCP sessions one account may hold open at once, across every replica of the database")
	f.Int64Var(&s.cfg.Limits.MaxBodyBytes, "max-body-bytes", s.cfg.Limits.MaxBodyBytes, "largest request body accepted")
	f.DurationVar(&s.cfg.AuthCacheTTL, "auth-cache-ttl", s.cfg.AuthCacheTTL, "how long a verified credential is reused without a database read (bounds how long a revoked key works on other replicas)")
	f.DurationVar(&s.cfg.ShutdownTimeout, "shutdown-timeout", s.cfg.ShutdownTimeout, "how long in-flight requests may finish on SIGTERM")
	f.DurationVar(&s.cfg.Limits.RequestTimeout, "request-timeout", s.cfg.Limits.RequestTimeout, "every request's deadline, waiting for a database connection included; past it the answer is 503 (0: none)")
	f.DurationVar(&s.cfg.DBReadTimeout, "db-read-timeout", store.DefaultReadTimeout, "longest wait for a Postgres reply when no request deadline is earlier")
	f.DurationVar(&s.cfg.DBStatementTimeout, "db-statement-timeout", store.DefaultStatementTimeout, "Postgres statement_timeout; below --db-read-timeout, so that Postgres gives up first")
	f.DurationVar(&s.cfg.SessionIdleTimeout, "session-idle-timeout", s.cfg.SessionIdleTimeout, "how long a dashboard session may go unused before it ends")
	f.DurationVar(&s.cfg.SessionMaxAge, "session-max-age", s.cfg.SessionMaxAge, "how long after sign-in a dashboard session ends, however busy")
	f.DurationVar(&s.cfg.IdempotencyLock, "idempotency-lock", s.cfg.IdempotencyLock, "how long a request holds its Idempotency-Key before a retry may take it over (keep it above the request deadline)")
	f.BoolVar(&s.cfg.MigrateOnStart, "migrate", s.cfg.MigrateOnStart, "apply pending migrations at start-up")
	f.IntVar(&s.cfg.DBMaxConns, "db-max-conns", 0, "database pool size (0: from the CPU count)")
	f.BoolVar(&s.cfg.RunJobs, "jobs", s.cfg.RunJobs, "run background jobs (deliveries) in this process; false serves the API only")
	f.IntVar(&s.cfg.JobWorkers, "job-workers", 0, "jobs run at once in this process (0: from the CPU count)")
	f.Float64Var(&s.cfg.Fair.AccountShare, "job-account-share", s.cfg.Fair.AccountShare, "fraction of the job workers of every replica (and of their --cron-concurrency) that one account's jobs may hold at once, at least one (1: no bound)")
	f.IntVar(&s.cfg.Fair.EndpointLimit, "job-endpoint-limit", s.cfg.Fair.EndpointLimit, "attempts to one stalled endpoint (an account's webhook, an agent number, its attachment URLs) at once, across the replicas")
	f.DurationVar(&s.cfg.Fair.EndpointStall, "job-endpoint-stall", s.cfg.Fair.EndpointStall, "how long an endpoint with attempts running may go without an answer before --job-endpoint-limit binds it")
	f.IntVar(&s.cfg.Fair.BreakerFailures, "job-breaker-failures", s.cfg.Fair.BreakerFailures, "consecutive failed attempts (no answer, timeout, 5xx, 429) that open an endpoint's circuit breaker")
	f.DurationVar(&s.cfg.Fair.BreakerOpen, "job-breaker-open", s.cfg.Fair.BreakerOpen, "how long an endpoint's breaker first stays open (its jobs wait, using no attempts); doubles after each failed probe")
	f.DurationVar(&s.cfg.Fair.BreakerMaxOpen, "job-breaker-max-open", s.cfg.Fair.BreakerMaxOpen, "longest an endpoint's breaker stays open before a probe")
	f.BoolVar(&s.cfg.Production, "production", s.cfg.Production, "production mode: no GraphQL playground at /graphql/playground, and no start without --smtp-url unless --sandbox-email")
	f.StringVar(&s.cfg.PublicURL, "public-url", "", "the server's public https URL, which Telegram and WhatsApp call (Telegram webhooks are set under it)")
	f.DurationVar(&s.cfg.MediaLinkLifetime, "media-link-lifetime", s.cfg.MediaLinkLifetime, "how long a signed link to a user's media (in webhook payloads and message reads) opens it without credentials")
	f.BoolVar(&s.cfg.TelegramPolling, "telegram-polling", s.cfg.TelegramPolling, "poll Telegram (getUpdates) for bots in polling mode: each bot is polled by one replica at a time, elected by a lease in the database; false: never poll in this process")
	f.DurationVar(&s.cfg.CronGrace, "cron-grace", s.cfg.CronGrace, "how late a cron run missed during downtime may still be made (older missed runs are skipped)")
	f.IntVar(&s.cfg.CronMaxJobsPerAccount, "cron-max-jobs-per-account", s.cfg.CronMaxJobsPerAccount, "cron jobs an account may have")
	f.IntVar(&s.cfg.CronConcurrency, "cron-concurrency", s.cfg.CronConcurrency, "cron calls in flight at once in this process: the workers of the cron runs' queue jobs")
	periodVar(f, &s.cfg.HistoryRetention, "history-retention", "how long accounts' history (events, webhook deliveries and their attempts, cron executions, the sandbox mailbox) is kept, unless an account sets its own period; what is still needed stays")
	f.DurationVar(&s.cfg.HistoryPruneInterval, "history-prune-interval", s.cfg.HistoryPruneInterval, "time between passes of the history pruner (one replica at a time prunes)")
	f.StringVar(&debugAddr, "debug-addr", "", "loopback address (127.0.0.1:6060) serving Go's /debug/pprof profiles; empty: off")
	f.BoolVar(&demo, "demo", false, "create a demo account with a sandbox WhatsApp number if the database has no account, and print how to call it")
	return cmd
}

func serve(ctx context.Context, s *settings, demo bool, out io.Writer) error {
	demoDefault := demo && s.allowPrivateURLs == ""
	if demoDefault {
		// A newcomer's webhook or cron receiver runs on their machine.
		prefixes, err := bootstrap.ParsePrefixes(bootstrap.DemoPrivateURLs)
		if err != nil {
			return err
		}
		s.cfg.AllowPrivateURLs = prefixes
	}
	// Refuse a bad configuration before anything is migrated or started.
	if err := s.cfg.Check(); err != nil {
		return err
	}
	// Caught from the start: a SIGTERM that arrives while the service
	// starts (once it has printed its address, say) stops it cleanly
	// instead of killing it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	var (
		svc      *accounts.Service
		listener *edge.Listener
	)
	s.cfg.Version = version
	app := fx.New(bootstrap.Options(s.cfg), fx.Populate(&svc, &listener))
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	if demo {
		if err := printDemo(ctx, svc, s.cfg.Scheme()+"://"+listener.Addr.String(), s.cfg.AllowPrivateURLs, demoDefault, out); err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
			defer cancel()
			_ = app.Stop(stopCtx)
			return err
		}
	}
	select {
	case <-sig:
	case <-ctx.Done():
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), app.StopTimeout())
	defer stopCancel()
	return app.Stop(stopCtx)
}

// printDemo ensures the demo account and prints how to call it: the
// credentials the first time, the accounts afterwards, the dashboard's
// address, and which private ranges customer URLs may point into
// (demoDefault: DemoPrivateURLs, as the operator set none).
func printDemo(ctx context.Context, svc *accounts.Service, base string, private []netip.Prefix, demoDefault bool, out io.Writer) error {
	d, err := svc.EnsureDemo(ctx)
	if err != nil {
		return fmt.Errorf("create demo account: %w", err)
	}
	ranges := make([]string, len(private))
	for i, p := range private {
		ranges[i] = p.String()
	}
	// The lines every start prints, under the credentials.
	footer := fmt.Sprintf("Dashboard:     %s/dashboard/\n", base)
	switch {
	case demoDefault:
		footer += fmt.Sprintf("Private URLs:  webhooks, cron jobs and media may call %s\n"+
			"               (demo only: without --demo, SWITCHBOARD_ALLOW_PRIVATE_URLS must list them)\n", strings.Join(ranges, ", "))
	case len(ranges) > 0:
		footer += fmt.Sprintf("Private URLs:  webhooks, cron jobs and media may call %s (SWITCHBOARD_ALLOW_PRIVATE_URLS)\n", strings.Join(ranges, ", "))
	}
	if d == nil {
		list, err := svc.Accounts(ctx)
		if err != nil {
			return err
		}
		var ids []string
		for _, a := range list {
			ids = append(ids, a.ID)
		}
		fmt.Fprintf(out, "\nSwitchboard is running at %s (accounts: %s).\n", base, strings.Join(ids, ", "))
		fmt.Fprintf(out, "Secrets are shown only once; for a new key run:\n  ./bin/switchboard keys create --account %s\n\n%s\n", ids[0], footer)
		return nil
	}
	fmt.Fprintf(out, `
Switchboard is running at %[1]s with a demo account.

  account id:  %[2]s
  api key:     %[3]s
  api secret:  %[4]s   (shown once; only a keyed hash is stored)
  number:      %[5]s (whatsapp, sandbox)

Try it:
  curl -s %[1]s/v1/accounts/%[2]s \
    -H 'X-API-Key: %[3]s' \
    -H 'X-API-Secret: %[4]s'

%[6]s
`, base, d.Account.ID, d.Credential.Key, d.Credential.Secret, d.Number.Number, footer)
	return nil
}
