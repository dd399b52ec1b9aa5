// Package listener is Switchboard's SMTP server for received email, on
// github.com/emersion/go-smtp. It accepts mail only for the addresses its
// Receiver knows (550 for any other: it never relays), at most
// MaxMessageBytes a message (552 past it, nothing kept), at most
// MaxConnections connections at once, and a per-sender-address rate (450
// past it). A message answered 250 was committed by the Receiver before
// the answer. STARTTLS is offered when a certificate is configured.
//
// Memory is bounded by MaxMessageBytes times MaxConnections: each
// connection holds at most one message while it is stored.
package listener

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
	"golang.org/x/net/netutil"

	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Receiver is what the listener needs from the email use cases.
type Receiver interface {
	// Recipient finds the account owning an address: NotFound when none
	// does.
	Recipient(ctx context.Context, address string) (email.SpooledRecipient, error)
	// Spool stores an accepted message durably, or fails.
	Spool(ctx context.Context, m email.Spooled) (email.Spooled, error)
}

// SenderLimit admits one message from sender (the envelope sender,
// lower-case; "<>" and the client address for a bounce), or refuses it
// for the sender's rate.
type SenderLimit func(ctx context.Context, sender string) bool

// Config is the listener's settings; zero fields take Defaults'.
type Config struct {
	// Addr is where it listens (":25", "127.0.0.1:2525").
	Addr string
	// Hostname is the name it greets with, the MX host of the domains.
	Hostname string
	// TLS, when set, is offered with STARTTLS.
	TLS             *tls.Config
	MaxMessageBytes int64
	MaxRecipients   int
	MaxConnections  int
	// Timeout bounds each read and write of a connection; StoreTimeout
	// bounds looking up a recipient and storing a message.
	Timeout      time.Duration
	StoreTimeout time.Duration
}

// Defaults are the listener's defaults.
var Defaults = Config{
	MaxMessageBytes: 25 << 20,
	MaxRecipients:   50,
	MaxConnections:  100,
	Timeout:         2 * time.Minute,
	StoreTimeout:    30 * time.Second,
}

// Listener is a running SMTP server.
type Listener struct {
	srv *smtp.Server
	ln  net.Listener
	log *slog.Logger
}

// Listen starts serving on cfg.Addr.
func Listen(cfg Config, r Receiver, limit SenderLimit, log *slog.Logger) (*Listener, error) {
	cfg = withDefaults(cfg)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("smtp listen on %s: %w", cfg.Addr, err)
	}
	b := &backend{r: r, limit: limit, cfg: cfg, log: log}
	srv := smtp.NewServer(b)
	srv.Domain = cfg.Hostname
	srv.TLSConfig = cfg.TLS
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	srv.MaxRecipients = cfg.MaxRecipients
	srv.ReadTimeout, srv.WriteTimeout = cfg.Timeout, cfg.Timeout
	srv.ErrorLog = logAdapter{log}
	l := &Listener{srv: srv, ln: netutil.LimitListener(ln, cfg.MaxConnections), log: log}
	go func() {
		if err := srv.Serve(l.ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
			log.Error("smtp listener stopped", "err", err)
		}
	}()
	return l, nil
}

func withDefaults(c Config) Config {
	d := Defaults
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.MaxRecipients <= 0 {
		c.MaxRecipients = d.MaxRecipients
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = d.MaxConnections
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = d.StoreTimeout
	}
	if c.Hostname == "" {
		c.Hostname = "localhost"
	}
	return c
}

// Addr is the address it listens on.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Shutdown stops accepting and waits for open sessions to end, until ctx
// ends; then it closes them.
func (l *Listener) Shutdown(ctx context.Context) error {
	err := l.srv.Shutdown(ctx)
	if err != nil {
		_ = l.srv.Close()
	}
	return err
}

type backend struct {
	r     Receiver
	limit SenderLimit
	cfg   Config
	log   *slog.Logger
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	ip := ""
	if addr, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
		ip = addr.IP.String()
	}
	return &session{b: b, conn: c, remoteIP: ip}, nil
}

// The replies the listener gives besides go-smtp's own.
var (
	errNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
		Message: "No such recipient here: this server accepts mail only for its own addresses"}
	errRate = &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1},
		Message: "Too many messages from this sender; try again later"}
	errStore = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "The message could not be stored; try again later"}
)

// session is one SMTP transaction at a time of a connection.
type session struct {
	b        *backend
	conn     *smtp.Conn
	remoteIP string
	from     string
	rcpts    []email.SpooledRecipient
}

func (s *session) Reset() { s.from, s.rcpts = "", nil }

func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	key := strings.ToLower(from)
	if key == "" {
		key = "<>" + s.remoteIP
	}
	if s.b.limit != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.StoreTimeout)
		defer cancel()
		if !s.b.limit(ctx, key) {
			return errRate
		}
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.StoreTimeout)
	defer cancel()
	rcpt, err := s.b.r.Recipient(ctx, to)
	switch {
	case failure.Is(err, failure.KindNotFound):
		return errNoSuchUser
	case err != nil:
		s.b.log.Warn("smtp: recipient lookup failed", "err", err)
		return errStore
	}
	for _, r := range s.rcpts {
		if r.Address == rcpt.Address {
			return nil
		}
	}
	s.rcpts = append(s.rcpts, rcpt)
	return nil
}

func (s *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return err // go-smtp answers ErrDataTooLarge with 552
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.StoreTimeout)
	defer cancel()
	m, err := s.b.r.Spool(ctx, email.Spooled{
		RemoteIP: s.remoteIP, Helo: s.conn.Hostname(), MailFrom: s.from, Recipients: s.rcpts, Raw: buf.Bytes(),
	})
	if err != nil {
		s.b.log.Warn("smtp: storing a message failed", "err", err, "size", buf.Len())
		return errStore
	}
	s.b.log.Info("smtp: message received", "id", m.ID, "size", buf.Len(), "recipients", len(s.rcpts), "remote_ip", s.remoteIP)
	return nil
}

// logAdapter writes go-smtp's log lines to slog.
type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Printf(format string, v ...any) { l.log.Warn("smtp: " + fmt.Sprintf(format, v...)) }
func (l logAdapter) Println(v ...any)               { l.log.Warn("smtp: " + strings.TrimSpace(fmt.Sprintln(v...))) }
