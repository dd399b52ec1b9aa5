// Package bootstrap is the composition root: it reads the configuration,
// binds the adapters to the ports the use cases declare, and assembles the
// app with go.uber.org/fx. Nothing else in the code base knows about fx
// beyond each adapter's own module.
package bootstrap

import (
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/retention"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// Config is every setting of the service. Each has a flag and a
// SWITCHBOARD_* environment variable (see cmd/switchboard).
type Config struct {
	Addr        string
	DatabaseURL string
	TLSCertFile string
	TLSKeyFile  string
	// SecretKey is the server key every secret derives from (hex, at least
	// 32 bytes, or any string of at least 32 characters).
	SecretKey     string
	SecretKeyFile string
	EmailDomain   string
	// SMTPURL is the relay email goes through
	// (smtp://user:pass@host:port?tls=starttls|implicit|none); empty
	// keeps email in the sandbox mailbox. SMTPDKIM lists DKIM keys,
	// domain=selector:keyfile, comma-separated.
	SMTPURL  string
	SMTPDKIM string
	// SandboxEmail asks for the sandbox mailbox explicitly: --production
	// refuses to start without a relay unless it is set.
	SandboxEmail bool
	// Mailbox bounds the sandbox mailbox.
	Mailbox appemail.MailboxLimits
	// SMTP is the listener for received email (off unless Listen is set).
	SMTP SMTPListen
	// AllowPrivateURLs lists ranges that customer URLs may point into, for
	// self-hosted setups; empty means only public addresses.
	AllowPrivateURLs []netip.Prefix
	LogLevel         slog.Level
	LogFormat        string
	Limits           edge.Limits
	AuthCacheTTL     time.Duration
	ShutdownTimeout  time.Duration
	// IdempotencyLock is how long a request holds its Idempotency-Key
	// before a retry may take it over (edge.Idempotency).
	IdempotencyLock time.Duration
	MigrateOnStart  bool
	DBMaxConns      int
	// DBReadTimeout and DBStatementTimeout bound Postgres's answers (see
	// store.Options); 0 picks the defaults.
	DBReadTimeout      time.Duration
	DBStatementTimeout time.Duration
	// oneShot marks an operator command's app (OperatorOptions): no
	// database health watcher or maintenance loop runs in it.
	oneShot bool
	// RunJobs runs the job runner in this process (deliveries, webhooks,
	// cron); JobWorkers bounds its concurrent jobs (0: from the CPU count).
	RunJobs    bool
	JobWorkers int
	// Fair is how the runner shares its workers among accounts and
	// endpoints (see runner.Config: AccountShare, EndpointLimit and the
	// circuit breaker's settings); zero fields take the runner's
	// defaults. AccountShare also bounds one account's share of
	// CronConcurrency.
	Fair Fairness
	// Production turns off what only helps development: the GraphQL
	// playground at /graphql/playground, and the sandbox mailbox unless
	// SandboxEmail asks for it.
	Production bool
	// Version is the release the binary reports, to MCP clients too; the
	// command sets it.
	Version string
	// PublicURL is the server's address as the messaging providers reach
	// it (https://switchboard.example.com); Telegram bots get their
	// webhook set under it. TelegramPolling lets this process poll
	// (getUpdates) bots in polling mode: each bot is polled by the one
	// replica that holds its poll lease; false never polls here.
	PublicURL       string
	TelegramPolling bool
	// MediaLinkLifetime is how long a signed link to a user's media opens
	// it (messaging.DefaultMediaLinkLifetime when 0).
	MediaLinkLifetime time.Duration
	// CronGrace is how late a missed cron run may still be made after
	// downtime; CronMaxJobsPerAccount bounds each account's cron jobs;
	// CronConcurrency bounds this process's cron calls in flight.
	CronGrace             time.Duration
	CronMaxJobsPerAccount int
	CronConcurrency       int

	// MCP are the limits of the Model Context Protocol endpoint /mcp.
	MCP MCPLimits

	// HistoryRetention is how long accounts' history (events, webhook
	// deliveries and attempts, cron executions, the sandbox mailbox) is
	// kept unless an account sets its own period; HistoryPruneInterval
	// is the time between the pruner's passes.
	HistoryRetention     time.Duration
	HistoryPruneInterval time.Duration

	// SessionIdleTimeout ends a dashboard session unused for this long;
	// SessionMaxAge ends it this long after sign-in in any case.
	SessionIdleTimeout time.Duration
	SessionMaxAge      time.Duration
}

// SMTPListen configures the SMTP listener that receives email.
type SMTPListen struct {
	// Listen is its address (":25"); empty: email is not received.
	Listen string
	// Hostname is the name it greets with and the MX host the docs and
	// the CLI tell domains to publish.
	Hostname string
	// TLSCertFile and TLSKeyFile are the certificate offered with
	// STARTTLS: the HTTP server's (TLSCertFile) when empty.
	TLSCertFile, TLSKeyFile string
	MaxMessageBytes         int64
	MaxConnections          int
	// SenderPerMinute bounds the messages one envelope sender may
	// deliver per minute (0: no bound).
	SenderPerMinute int
	// DNS is the host:port of the DNS server the SPF, DKIM and DMARC
	// checks of received email ask; empty: the system's resolver.
	DNS string
	// Inbound bounds what received email stores.
	Inbound appemail.InboundLimits
}

// MCPLimits bound who may call /mcp and how many sessions an account
// holds.
type MCPLimits struct {
	// AllowedOrigins are the browser origins whose requests /mcp serves
	// (ParseOrigins); a request with another Origin header is 403. Empty:
	// any request with an Origin is refused.
	AllowedOrigins []string
	// AllowedHosts are the host names a request to /mcp on a loopback
	// connection may name beside loopback ones (ParseHosts): a TLS proxy
	// on the same host that passes the public Host on.
	AllowedHosts []string
	// MaxSessionsPerAccount bounds an account's open MCP sessions,
	// across every replica of the database.
	MaxSessionsPerAccount int
	// SessionIdleTimeout ends an MCP session that has had no request for
	// this long (mcpsessions.DefaultIdleTimeout when 0).
	SessionIdleTimeout time.Duration
}

// Fairness are the knobs of fair background work.
type Fairness struct {
	AccountShare                float64
	EndpointLimit               int
	EndpointStall               time.Duration
	BreakerFailures             int
	BreakerOpen, BreakerMaxOpen time.Duration
}

// PrivateURLsHint ends the message of every customer URL refused for its
// address: how the operator allows it.
const PrivateURLsHint = "private, loopback and link-local addresses are refused unless the server's SWITCHBOARD_ALLOW_PRIVATE_URLS (--allow-private-urls) lists their range"

// DemoPrivateURLs is what `serve --demo` allows customer URLs to point
// into when SWITCHBOARD_ALLOW_PRIVATE_URLS is not given: loopback and the
// private ranges, so that a webhook or cron receiver on the developer's
// machine or network works at once. Link-local addresses (cloud metadata)
// stay refused.
const DemoPrivateURLs = "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"

// DefaultDatabaseURL is the embedded default: a SQLite file in ./var.
const DefaultDatabaseURL = "sqlite:./var/switchboard.db"

// Defaults returns the configuration when nothing is set.
func Defaults() Config {
	return Config{
		Addr:        "127.0.0.1:8080",
		DatabaseURL: DefaultDatabaseURL,
		EmailDomain: "mail.switchboard.local",
		Mailbox:     appemail.DefaultMailboxLimits,
		SMTP: SMTPListen{
			MaxMessageBytes: 25 << 20, MaxConnections: 100, SenderPerMinute: 60, Inbound: appemail.DefaultInboundLimits,
		},
		LogLevel:        slog.LevelInfo,
		LogFormat:       "text",
		Limits:          edge.DefaultLimits,
		AuthCacheTTL:    5 * time.Second,
		ShutdownTimeout: 15 * time.Second,
		IdempotencyLock: edge.DefaultIdempotencyLock,
		MigrateOnStart:  true,
		RunJobs:         true,
		Fair: Fairness{
			AccountShare: runner.DefaultAccountShare, EndpointLimit: runner.DefaultEndpointLimit, EndpointStall: runner.DefaultEndpointStall,
			BreakerFailures: runner.DefaultBreakerFailures,
			BreakerOpen:     runner.DefaultBreakerOpen, BreakerMaxOpen: runner.DefaultBreakerMaxOpen,
		},
		TelegramPolling:   true,
		MediaLinkLifetime: appmessaging.DefaultMediaLinkLifetime,

		CronGrace:             5 * time.Minute,
		CronMaxJobsPerAccount: 1000,
		CronConcurrency:       2000,

		MCP: MCPLimits{MaxSessionsPerAccount: mcpsessions.DefaultMaxPerAccount},

		SessionIdleTimeout: sessions.DefaultIdleTimeout,
		SessionMaxAge:      sessions.DefaultMaxAge,

		HistoryRetention:     account.DefaultHistoryRetention,
		HistoryPruneInterval: retention.DefaultInterval,
	}
}

// ParsePrefixes reads a comma-separated CIDR list ("10.0.0.0/8,fd00::/8");
// a bare address means that one address.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range or an IP address", item)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// ParseOrigins reads a comma-separated list of browser origins
// ("https://app.example.com,http://localhost:3000"): a scheme (http or
// https) and a host with its port when not the scheme's default, as a
// browser sends them in the Origin header; nothing else.
func ParseOrigins(list string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		u, err := url.Parse(item)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(item, "?") || strings.HasSuffix(item, "#") {
			return nil, fmt.Errorf("%q is not an origin: use scheme://host[:port], as a browser sends it (https://app.example.com)", item)
		}
		if port := u.Port(); (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
			return nil, fmt.Errorf("%q names its scheme's default port, which a browser leaves out of the Origin: use %s://%s", item, u.Scheme, u.Hostname())
		}
		out = append(out, strings.ToLower(item))
	}
	return out, nil
}

// ParseHosts reads a comma-separated list of host names or IP addresses
// ("switchboard.example.com"), without scheme or port.
func ParseHosts(list string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if _, err := netip.ParseAddr(item); err != nil && (strings.ContainsAny(item, ":/[]@?# ") || strings.Contains(item, "..")) {
			return nil, fmt.Errorf("%q is not a host name: give the name alone, without scheme or port (switchboard.example.com)", item)
		}
		out = append(out, strings.ToLower(item))
	}
	return out, nil
}

// Keyring builds the server keyring. Without a configured key, a SQLite
// deployment keeps a generated key in a file beside its database (so
// `make run` needs no setup); a Postgres deployment must be given one,
// because every replica has to share it.
func (c Config) Keyring() (*keyring.Keyring, error) {
	raw := c.SecretKey
	if raw == "" && c.SecretKeyFile != "" {
		b, err := os.ReadFile(c.SecretKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read secret key file: %w", err)
		}
		raw = strings.TrimSpace(string(b))
	}
	if raw == "" {
		path, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:")
		if !ok && !strings.HasPrefix(c.DatabaseURL, "postgres") {
			return nil, fmt.Errorf("database URL must start with sqlite: or postgres://, got %q", c.DatabaseURL)
		}
		if !ok {
			return nil, errors.New("SWITCHBOARD_SECRET_KEY (or SWITCHBOARD_SECRET_KEY_FILE) is required with Postgres, and must be the same on every replica; generate one with: openssl rand -hex 32")
		}
		var err error
		if raw, err = localSecretKey(filepath.Join(filepath.Dir(path), "secret.key")); err != nil {
			return nil, err
		}
	}
	key := []byte(raw)
	if b, err := hex.DecodeString(raw); err == nil && len(b) >= keyring.MinKeyLength {
		key = b
	}
	k, err := keyring.New(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w (use 64 hex characters: openssl rand -hex 32)", err)
	}
	return k, nil
}

// localSecretKey reads the key file, creating it with a fresh random key
// the first time. The key is written to a temporary file and linked into
// place, so a process starting at the same moment reads either nothing (and
// links its own, losing the race cleanly) or the whole key, never a part.
func localSecretKey(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read secret key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create secret key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".secret.key-*")
	if err != nil {
		return "", fmt.Errorf("create secret key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(randomBytes(32)) + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write secret key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write secret key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write secret key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("install secret key: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read secret key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Check validates what can be checked before anything is started or
// migrated: the database URL's form, the server key, and the TLS files.
func (c Config) Check() error {
	if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return fmt.Errorf("database URL must start with sqlite: or postgres://, got %q", c.DatabaseURL)
	}
	if _, err := c.Keyring(); err != nil {
		return err
	}
	if err := c.checkEmail(); err != nil {
		return err
	}
	if p := c.Limits.AuthFailuresIPv6Prefix; p < 0 || p > 128 {
		return fmt.Errorf("auth-failures-ipv6-prefix must be 1 to 128 (bits of an IPv6 address), got %d", p)
	}
	if c.MCP.MaxSessionsPerAccount <= 0 {
		return fmt.Errorf("mcp-max-sessions-per-account must be positive, got %d", c.MCP.MaxSessionsPerAccount)
	}
	if err := account.CheckHistoryRetention(c.HistoryRetention); err != nil {
		return fmt.Errorf("history-retention (SWITCHBOARD_HISTORY_RETENTION): %w", err)
	}
	if c.HistoryPruneInterval <= 0 {
		return fmt.Errorf("history-prune-interval must be positive, got %s", c.HistoryPruneInterval)
	}
	if c.SessionIdleTimeout <= 0 || c.SessionMaxAge <= 0 {
		return fmt.Errorf("session-idle-timeout and session-max-age must be positive, got %s and %s", c.SessionIdleTimeout, c.SessionMaxAge)
	}
	if c.SMTP.DNS != "" {
		if _, _, err := net.SplitHostPort(c.SMTP.DNS); err != nil {
			return fmt.Errorf("SWITCHBOARD_SMTP_DNS (--smtp-dns) must be host:port, such as 127.0.0.53:53, got %q", c.SMTP.DNS)
		}
	}
	if (c.SMTP.TLSCertFile == "") != (c.SMTP.TLSKeyFile == "") {
		return errors.New("STARTTLS needs both a certificate file and a key file (SWITCHBOARD_SMTP_TLS_CERT_FILE and SWITCHBOARD_SMTP_TLS_KEY_FILE)")
	}
	if c.SMTP.TLSCertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.SMTP.TLSCertFile, c.SMTP.TLSKeyFile); err != nil {
			return fmt.Errorf("load SMTP TLS certificate: %w", err)
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("TLS needs both a certificate file and a key file (SWITCHBOARD_TLS_CERT_FILE and SWITCHBOARD_TLS_KEY_FILE)")
	}
	if c.TLSCertFile != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
	}
	return nil
}

// Scheme is the URL scheme the server speaks.
// BaseURL is where clients reach the server: PublicURL, or the listen
// address when none is set.
func (c Config) BaseURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c.Scheme() + "://" + c.Addr
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return c.Scheme() + "://" + net.JoinHostPort(host, port)
}

func (c Config) Scheme() string {
	if c.TLSCertFile != "" && c.TLSKeyFile != "" {
		return "https"
	}
	return "http"
}

// NewLogger builds the process logger.
func (c Config) NewLogger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
