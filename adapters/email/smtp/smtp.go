// Package smtp sends email through an SMTP relay with
// github.com/wneessen/go-mail. It is configured by one URL,
//
//	smtp://user:pass@host:port?tls=starttls|implicit|none
//
// speaks STARTTLS (required, the default) or implicit TLS, authenticates
// when the URL has a user, and keeps a small pool of authenticated
// connections that concurrent delivery jobs share, so that a burst of
// emails costs one TLS handshake and one AUTH per connection, not per
// email. Each email carries the Message-ID fixed when it was accepted;
// HTML bodies go out as multipart/alternative beside their text part; Bcc
// recipients are in the envelope only. Emails from a domain with a DKIM
// key are signed.
package smtp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	mail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"

	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// TLS modes.
const (
	TLSStartTLS = "starttls"
	TLSImplicit = "implicit"
	TLSNone     = "none"
)

// Config is a parsed SMTP URL plus what a URL cannot carry.
type Config struct {
	Host     string
	Port     int
	Username string
	Password string
	// TLS is starttls, implicit or none.
	TLS string
	// PoolSize bounds open connections (the URL's pool parameter, 4 by
	// default); sends beyond it wait for a connection.
	PoolSize int
	// HELO is the name this client greets with (the URL's helo parameter;
	// the machine's host name by default).
	HELO string
	// TLSConfig, when set, replaces the default TLS configuration (tests
	// pass one that trusts their own certificate).
	TLSConfig *tls.Config
	// Timeout bounds dialling and each SMTP command; 30 s by default.
	Timeout time.Duration
	// DKIM signs emails whose From domain has a signer.
	DKIM DKIMKeys
	// IdleTimeout closes pooled connections unused for this long instead
	// of reusing them (relays drop idle clients); 30 s by default.
	IdleTimeout time.Duration
	// MaxPerConnection is how many emails one connection carries before
	// it is replaced; 100 by default.
	MaxPerConnection int
}

// ParseURL reads SWITCHBOARD_SMTP_URL.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("smtp URL is malformed: %w", errors.Unwrap(err))
	}
	c := Config{TLS: TLSStartTLS, PoolSize: 4}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		c.TLS = TLSImplicit
	default:
		return Config{}, fmt.Errorf("smtp URL must start with smtp:// or smtps://, got %q", u.Scheme)
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return Config{}, errors.New("smtp URL needs a host: smtp://user:pass@host:port?tls=starttls")
	}
	q := u.Query()
	if t := q.Get("tls"); t != "" {
		switch t {
		case TLSStartTLS, TLSImplicit, TLSNone:
			c.TLS = t
		default:
			return Config{}, fmt.Errorf("smtp URL: tls must be starttls, implicit or none, got %q", t)
		}
	}
	switch p := u.Port(); {
	case p != "":
		if c.Port, err = strconv.Atoi(p); err != nil || c.Port < 1 || c.Port > 65535 {
			return Config{}, fmt.Errorf("smtp URL: bad port %q", p)
		}
	case c.TLS == TLSImplicit:
		c.Port = 465
	case c.TLS == TLSNone:
		c.Port = 25
	default:
		c.Port = 587
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if p := q.Get("pool"); p != "" {
		if c.PoolSize, err = strconv.Atoi(p); err != nil || c.PoolSize < 1 || c.PoolSize > 100 {
			return Config{}, fmt.Errorf("smtp URL: pool must be 1-100, got %q", p)
		}
	}
	c.HELO = q.Get("helo")
	return c, nil
}

// Redacted is the URL without its password, for logs.
func (c Config) Redacted() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), RawQuery: "tls=" + c.TLS}
	if c.Username != "" {
		u.User = url.UserPassword(c.Username, "xxxxx")
	}
	return u.String()
}

// Sender is the SMTP adapter of the email Sender port. It is safe for
// concurrent use.
type Sender struct {
	cfg    Config
	client *mail.Client
	// slots holds one token per connection that may be open; idle holds
	// open connections nobody is using.
	slots chan struct{}
	idle  chan *conn
	now   func() time.Time

	mu     sync.Mutex
	closed bool
}

var _ appemail.Sender = (*Sender)(nil)

type conn struct {
	c        *gosmtp.Client
	lastUsed time.Time
	sent     int
}

// New builds a Sender; it connects lazily, on the first send.
func New(cfg Config) (*Sender, error) {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.MaxPerConnection <= 0 {
		cfg.MaxPerConnection = 100
	}
	tlsConfig := cfg.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}
	}
	// No NOOP before each email: a pooled connection the relay dropped
	// fails at MAIL FROM instead, before anything was sent, and is
	// replaced (see Send); that saves a round trip per email.
	opts := []mail.Option{mail.WithPort(cfg.Port), mail.WithTimeout(cfg.Timeout), mail.WithTLSConfig(tlsConfig), mail.WithoutNoop()}
	switch cfg.TLS {
	case TLSStartTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	case TLSImplicit:
		opts = append(opts, mail.WithSSL(), mail.WithTLSPolicy(mail.NoTLS))
	case TLSNone:
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		return nil, fmt.Errorf("smtp: unknown TLS mode %q", cfg.TLS)
	}
	if cfg.Username != "" {
		auth := mail.SMTPAuthAutoDiscover
		if cfg.TLS == TLSNone {
			// PLAIN without TLS: the library allows it to localhost only,
			// so credentials never cross a network in the clear.
			auth = mail.SMTPAuthPlain
		}
		opts = append(opts, mail.WithSMTPAuth(auth), mail.WithUsername(cfg.Username), mail.WithPassword(cfg.Password))
	}
	if cfg.HELO != "" {
		opts = append(opts, mail.WithHELO(cfg.HELO))
	}
	client, err := mail.NewClient(cfg.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	s := &Sender{
		cfg: cfg, client: client, now: time.Now,
		slots: make(chan struct{}, cfg.PoolSize), idle: make(chan *conn, cfg.PoolSize),
	}
	for range cfg.PoolSize {
		s.slots <- struct{}{}
	}
	return s, nil
}

// Send writes one email to the relay over a pooled connection.
func (s *Sender) Send(ctx context.Context, out appemail.Outgoing) (appemail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return appemail.Receipt{}, err
	}
	msg, err := s.build(out)
	if err != nil {
		return appemail.Receipt{}, err
	}
	c, err := s.acquire(ctx)
	if err != nil {
		return appemail.Receipt{}, err
	}
	// A cancelled attempt drops its connection, which ends a blocked
	// command at once.
	stop := context.AfterFunc(ctx, func() { _ = c.c.Close() })
	err = s.client.SendWithSMTPClient(c.c, msg)
	if c.sent > 0 && ctx.Err() == nil && staleConnection(err) {
		// The relay dropped a pooled connection before this email's
		// transaction began: one fresh try.
		stop()
		s.discard(c, false)
		if c, err = s.acquire(ctx); err != nil {
			return appemail.Receipt{}, err
		}
		stop = context.AfterFunc(ctx, func() { _ = c.c.Close() })
		err = s.client.SendWithSMTPClient(c.c, msg)
	}
	interrupted := !stop()
	if err != nil {
		// A refused email leaves the connection usable (the library
		// resets the transaction); anything else may have broken it.
		if code := smtpCode(err); code >= 400 && !interrupted && code != 421 {
			s.release(c)
		} else {
			s.discard(c, false)
		}
		if interrupted && ctx.Err() != nil {
			return appemail.Receipt{}, ctx.Err()
		}
		return appemail.Receipt{}, translate(err)
	}
	c.sent++
	if interrupted {
		s.discard(c, false)
	} else {
		s.release(c)
	}
	reply := msg.ServerResponse()
	if !replyPattern.MatchString(reply) || !strings.HasPrefix(reply, "2") {
		// go-mail keeps the text of the final reply without its code.
		reply = strings.TrimSpace("250 " + reply)
	}
	return appemail.Receipt{Reply: reply}, nil
}

// acquire takes an idle connection or dials a new one within the pool.
func (s *Sender) acquire(ctx context.Context) (*conn, error) {
	for {
		select {
		case c := <-s.idle:
			if s.now().Sub(c.lastUsed) < s.cfg.IdleTimeout && c.sent < s.cfg.MaxPerConnection && c.c.HasConnection() {
				return c, nil
			}
			s.discard(c, true)
			continue
		default:
		}
		select {
		case c := <-s.idle:
			if s.now().Sub(c.lastUsed) < s.cfg.IdleTimeout && c.sent < s.cfg.MaxPerConnection && c.c.HasConnection() {
				return c, nil
			}
			s.discard(c, true)
		case <-s.slots:
			client, err := s.client.DialToSMTPClientWithContext(ctx)
			if err != nil {
				s.slots <- struct{}{}
				return nil, fmt.Errorf("smtp: connect to %s: %w", s.cfg.Redacted(), err)
			}
			return &conn{c: client, lastUsed: s.now()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release puts a healthy connection back.
func (s *Sender) release(c *conn) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.discard(c, true)
		return
	}
	c.lastUsed = s.now()
	s.idle <- c
}

// discard closes a connection and frees its slot; polite says QUIT first
// (on a healthy connection only, as a broken one could block on it).
func (s *Sender) discard(c *conn, polite bool) {
	if polite {
		_ = s.client.CloseWithSMTPClient(c.c)
	}
	_ = c.c.Close()
	s.slots <- struct{}{}
}

// Close says goodbye on every idle connection; connections in use close
// when their send ends.
func (s *Sender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case c := <-s.idle:
			s.discard(c, true)
		default:
			return nil
		}
	}
}

// build writes the Outgoing as a go-mail message, signed when its From
// domain has a DKIM key.
func (s *Sender) build(out appemail.Outgoing) (*mail.Msg, error) {
	date := out.Date
	if date.IsZero() {
		date = s.now()
	}
	m, err := message(out, date)
	if err != nil {
		return nil, err
	}
	if signer := s.cfg.DKIM.For(out.From); signer != nil {
		m.SetDKIM(signer)
	}
	return m, nil
}

// Composer writes emails as the Sender would send them, without sending
// (appemail.Composer): the sandbox's simulated received email is written
// so.
type Composer struct{}

var _ appemail.Composer = Composer{}

// Compose is out as RFC 5322 bytes, dated out.Date (now when zero).
func (Composer) Compose(out appemail.Outgoing) ([]byte, error) {
	date := out.Date
	if date.IsZero() {
		date = time.Now()
	}
	m, err := message(out, date)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		return nil, unsendable("message", err)
	}
	return b.Bytes(), nil
}

// message writes out as a go-mail message dated date.
func message(out appemail.Outgoing, date time.Time) (*mail.Msg, error) {
	m := mail.NewMsg(mail.WithNoDefaultUserAgent(), mail.WithCharset(mail.CharsetUTF8), mail.WithEncoding(mail.EncodingQP))
	if err := m.FromFormat(out.FromName, out.From); err != nil {
		return nil, unsendable("from", err)
	}
	for _, to := range out.To {
		if err := m.AddToFormat(to.Name, to.Address); err != nil {
			return nil, unsendable("to", err)
		}
	}
	if len(out.Cc) > 0 {
		if err := m.Cc(out.Cc...); err != nil {
			return nil, unsendable("cc", err)
		}
	}
	if len(out.Bcc) > 0 {
		// Bcc is an envelope recipient; go-mail never writes the header.
		if err := m.Bcc(out.Bcc...); err != nil {
			return nil, unsendable("bcc", err)
		}
	}
	if len(out.ReplyTo) > 0 {
		if err := m.SetAddrHeader(mail.HeaderReplyTo, out.ReplyTo...); err != nil {
			return nil, unsendable("reply-to", err)
		}
	}
	m.Subject(out.Subject)
	m.SetMessageIDWithValue(strings.TrimSuffix(strings.TrimPrefix(out.MessageID, "<"), ">"))
	m.SetDateWithValue(date)
	for _, h := range out.Headers {
		m.SetGenHeader(mail.Header(h.Name), h.Value)
	}
	m.SetBodyString(mail.TypeTextPlain, out.Text)
	if out.HTML != "" {
		m.AddAlternativeString(mail.TypeTextHTML, out.HTML)
	}
	if a := out.Attachment; a != nil {
		opts := []mail.FileOption{}
		if a.ContentType != "" {
			opts = append(opts, mail.WithFileContentType(mail.ContentType(a.ContentType)))
		}
		if err := m.AttachReader(a.Name, bytes.NewReader(a.Data), opts...); err != nil {
			return nil, unsendable("attachment", err)
		}
	}
	return m, nil
}

func unsendable(what string, err error) error {
	return fmt.Errorf("%w: %s: %v", appemail.ErrUnsendable, what, err)
}

// staleConnection reports a failure of a reused connection before any of
// the email was sent: the connection check, or MAIL FROM failing without a
// reply or with 421 (the relay is closing the connection).
func staleConnection(err error) bool {
	var se *mail.SendError
	if err == nil || !errors.As(err, &se) {
		return false
	}
	code := se.ErrorCode()
	return se.Reason == mail.ErrConnCheck || (se.Reason == mail.ErrSMTPMailFrom && (code == 0 || code == 421))
}

// replyPattern finds an SMTP reply in go-mail's error text.
var replyPattern = regexp.MustCompile(`\b[245][0-9]{2}[ -].*`)

// smtpCode is the reply code of a send error, 0 when the server gave none.
func smtpCode(err error) int {
	var se *mail.SendError
	if errors.As(err, &se) {
		return se.ErrorCode()
	}
	return 0
}

// translate turns go-mail's errors into the port's: a reply code becomes
// an *SMTPError (4xx temporary, 5xx permanent); the rest stays transient.
func translate(err error) error {
	var se *mail.SendError
	if !errors.As(err, &se) || se.ErrorCode() < 400 {
		return fmt.Errorf("smtp: %w", err)
	}
	reply := se.Error()
	if m := replyPattern.FindString(reply); m != "" {
		reply = m
		if i := strings.Index(reply, ", affected "); i >= 0 {
			reply = reply[:i]
		}
	}
	return &appemail.SMTPError{Code: se.ErrorCode(), EnhancedCode: se.EnhancedStatusCode(), Reply: strings.TrimSpace(reply)}
}
