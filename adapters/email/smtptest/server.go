// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp) on
// 127.0.0.1 for tests and benchmarks: it records every envelope and message
// it accepts, can require AUTH, speaks STARTTLS or implicit TLS with a
// generated certificate, and lets a test script its replies (a 451 then a
// 250, a 550).
package smtptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// TLS modes of the server, as the smtp URL's tls parameter names them.
const (
	TLSNone     = "none"
	TLSStartTLS = "starttls"
	TLSImplicit = "implicit"
)

// Options shape a Server.
type Options struct {
	// TLS is none (the default), starttls or implicit.
	TLS string
	// Username and Password, when set, make AUTH PLAIN required before MAIL.
	Username, Password string
	// OnData, when set, decides the reply to each message after its data
	// was read: nil accepts it (250), a *smtp.SMTPError refuses it with
	// that reply. Calls are serialised.
	OnData func(m Message) error
	// Discard keeps only counts, not messages (for benchmarks).
	Discard bool
	// DropAfter, when above 0, makes each connection drop (close without
	// a reply) at the MAIL FROM that follows its DropAfter-th accepted
	// message: a relay that hung up on an idle client.
	DropAfter int
}

// Message is one accepted (or scripted-refused) transaction.
type Message struct {
	// From and To are the envelope: MAIL FROM and every RCPT TO.
	From string
	To   []string
	// Data is the message as received, headers and body.
	Data []byte
}

// Server is a running SMTP server.
type Server struct {
	opts     Options
	srv      *smtp.Server
	listener net.Listener
	// ClientTLS trusts the server's generated certificate.
	ClientTLS *tls.Config

	mu        sync.Mutex
	messages  []Message
	attempts  int
	accepted  atomic.Int64
	conns     atomic.Int64
	authOK    atomic.Int64
	dataMu    sync.Mutex
	closeOnce sync.Once
}

// Start listens on 127.0.0.1 on a free port and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.TLS == "" {
		opts.TLS = TLSNone
	}
	s := &Server{opts: opts}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 200 << 20
	srv.MaxRecipients = 100
	srv.ErrorLog = discardLogger{}
	srv.EnableSMTPUTF8 = true

	var l net.Listener
	var err error
	switch opts.TLS {
	case TLSNone:
		srv.AllowInsecureAuth = true
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case TLSStartTLS, TLSImplicit:
		cert, pool, cerr := selfSigned()
		if cerr != nil {
			return nil, cerr
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.ClientTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		if opts.TLS == TLSImplicit {
			l, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
		} else {
			l, err = net.Listen("tcp", "127.0.0.1:0")
		}
	default:
		return nil, fmt.Errorf("smtptest: unknown TLS mode %q", opts.TLS)
	}
	if err != nil {
		return nil, err
	}
	l = &countingListener{Listener: l, n: &s.conns}
	s.srv, s.listener = srv, l
	go func() { _ = srv.Serve(l) }()
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the SWITCHBOARD_SMTP_URL that points at this server.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr(), RawQuery: "tls=" + s.opts.TLS}
	if s.opts.Username != "" {
		u.User = url.UserPassword(s.opts.Username, s.opts.Password)
	}
	return u.String()
}

// Close stops the server and drops its connections.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() { err = s.srv.Close() })
	return err
}

// Messages returns what was accepted, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Accepted counts accepted messages (kept even with Discard).
func (s *Server) Accepted() int { return int(s.accepted.Load()) }

// Attempts counts DATA transactions, refused ones included.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Connections counts TCP connections clients opened.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Authentications counts successful AUTH commands.
func (s *Server) Authentications() int { return int(s.authOK.Load()) }

// NewSession implements smtp.Backend.
func (s *Server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{srv: s, conn: c}, nil
}

type session struct {
	srv      *Server
	conn     *smtp.Conn
	accepted int
	authed   bool
	from     string
	to       []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.srv.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != ss.srv.opts.Username || password != ss.srv.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		ss.authed = true
		ss.srv.authOK.Add(1)
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.srv.opts.Username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	if d := ss.srv.opts.DropAfter; d > 0 && ss.accepted >= d {
		_ = ss.conn.Close()
		return errors.New("connection dropped")
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data}
	s := ss.srv
	s.mu.Lock()
	s.attempts++
	s.mu.Unlock()
	if s.opts.OnData != nil {
		s.dataMu.Lock()
		err := s.opts.OnData(m)
		s.dataMu.Unlock()
		if err != nil {
			return err
		}
	}
	s.accepted.Add(1)
	ss.accepted++
	if !s.opts.Discard {
		s.mu.Lock()
		s.messages = append(s.messages, m)
		s.mu.Unlock()
	}
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

// Reply builds a scripted refusal: Reply(451, "4.7.1", "try again later").
func Reply(code int, enhanced, text string) error {
	e := &smtp.SMTPError{Code: code, Message: text, EnhancedCode: smtp.NoEnhancedCode}
	var a, b, c int
	if _, err := fmt.Sscanf(enhanced, "%d.%d.%d", &a, &b, &c); err == nil {
		e.EnhancedCode = smtp.EnhancedCode{a, b, c}
	}
	return e
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
