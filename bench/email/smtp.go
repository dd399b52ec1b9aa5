package email

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpServer is the relay a Deliver slice delivers to: a go-smtp server on
// 127.0.0.1 in the bench process that accepts every message with a 250 and keeps
// only counts.
type smtpServer struct {
	srv      *smtp.Server
	ln       net.Listener
	accepted atomic.Int64
	conns    atomic.Int64
}

func startSMTP() (*smtpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &smtpServer{}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 200 << 20
	srv.MaxRecipients = 100
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = quiet{}
	s.srv, s.ln = srv, &countingListener{Listener: ln, n: &s.conns}
	go func() { _ = srv.Serve(s.ln) }()
	return s, nil
}

// URL is the server's --smtp-url, in clear.
func (s *smtpServer) URL() string { return "smtp://" + s.ln.Addr().String() + "?tls=none" }

// Close stops the server and drops its connections.
func (s *smtpServer) Close() error { return s.srv.Close() }

// NewSession implements smtp.Backend.
func (s *smtpServer) NewSession(*smtp.Conn) (smtp.Session, error) { return session{s}, nil }

type session struct{ s *smtpServer }

func (session) Mail(string, *smtp.MailOptions) error { return nil }
func (session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (session) Reset()                               {}
func (session) Logout() error                        { return nil }

func (ss session) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	ss.s.accepted.Add(1)
	return nil
}

// countingListener counts the connections clients opened.
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

type quiet struct{}

func (quiet) Printf(string, ...any) {}
func (quiet) Println(...any)        {}
