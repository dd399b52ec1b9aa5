package webhooks

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"sync"
	"time"
)

// Connections to receivers.
//
// A webhook is one small POST, and many go to the same few receivers. Over
// http.Transport each costs its connection's reader and writer goroutines
// and the hand-offs between them and the caller, which on a busy runner was
// a third of the CPU a delivery takes. The sender therefore speaks
// HTTP/1.1 itself, on connections it keeps per receiver: the calling worker
// writes the request and reads the answer (net/http's ReadResponse parses
// it, chunked bodies included). Every connection is dialed through the
// dial function it is given, the SSRF guard's, so the address check at
// connect time is unchanged; redirects are answers like any other.

// Dial opens a connection; the composition root passes the SSRF guard's.
type Dial func(ctx context.Context, network, address string) (net.Conn, error)

const (
	// maxIdlePerReceiver bounds the connections kept open to one receiver.
	maxIdlePerReceiver = 512
	// idleTimeout closes a connection unused for this long (receivers
	// commonly close theirs after a minute or more).
	idleTimeout = 50 * time.Second
	// idleCheckAfter: a connection idle longer is checked for a close by
	// the receiver before use (receivers close idle ones after seconds;
	// the few closed sooner are caught by the retry in post).
	idleCheckAfter = time.Second
	// connBuffer sizes a connection's reader and writer.
	connBuffer = 8 << 10
	// maxResponseHeaderBytes bounds what is read of an answer before its
	// header ends (as MaxResponseHeaderBytes does for http.Transport): a
	// longer header fails the attempt.
	maxResponseHeaderBytes = 64 << 10
)

// errHeaderTooLarge fails an attempt whose answer's header is too long.
var errHeaderTooLarge = fmt.Errorf("response header larger than %d bytes", maxResponseHeaderBytes)

// receiverConn is one kept-alive connection.
type receiverConn struct {
	net.Conn
	// in is what br reads from: the connection, bounded while a header
	// is read.
	in        *headerLimit
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// connPool keeps idle connections by receiver (scheme://host:port).
type connPool struct {
	dial Dial
	tls  *tls.Config
	// idleCheck overrides idleCheckAfter when positive (tests).
	idleCheck time.Duration

	mu   sync.Mutex
	idle map[string][]*receiverConn
}

// target is where a request goes.
type target struct {
	key, scheme, addr, host, requestURI string
}

func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return target{}, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	if u.Host == "" {
		return target{}, errors.New("URL has no host")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	return target{key: u.Scheme + "://" + addr, scheme: u.Scheme, addr: addr, host: u.Host, requestURI: u.RequestURI()}, nil
}

// get returns an idle connection to t, or dials one; reused tells which.
func (p *connPool) get(ctx context.Context, t target) (c *receiverConn, reused bool, err error) {
	now := time.Now()
	p.mu.Lock()
	for list := p.idle[t.key]; len(list) > 0; list = p.idle[t.key] {
		c = list[len(list)-1]
		p.idle[t.key] = list[:len(list)-1]
		if now.Sub(c.idleSince) < idleTimeout {
			p.mu.Unlock()
			if now.Sub(c.idleSince) > p.checkAfter() && c.closedByPeer() {
				_ = c.Close()
				p.mu.Lock()
				continue
			}
			return c, true, nil
		}
		_ = c.Close()
	}
	p.mu.Unlock()
	conn, err := p.dial(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, err
	}
	if t.scheme == "https" {
		cfg := p.tls.Clone()
		cfg.ServerName = hostOnly(t.addr)
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, false, err
		}
		conn = tc
	}
	in := &headerLimit{r: conn, left: -1}
	return &receiverConn{Conn: conn, in: in, br: bufio.NewReaderSize(in, connBuffer), bw: bufio.NewWriterSize(conn, connBuffer)}, false, nil
}

// headerLimit reads from r at most left bytes, or without a bound when
// left is negative.
type headerLimit struct {
	r    io.Reader
	left int64
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (p *connPool) checkAfter() time.Duration {
	if p.idleCheck > 0 {
		return p.idleCheck
	}
	return idleCheckAfter
}

// closedByPeer tells whether the receiver closed an idle connection (many
// close theirs after a few seconds): a read that may wait a millisecond
// finds the end of the stream, or bytes nobody asked for, instead of
// timing out. (With a deadline already passed Go would not even try the
// read.) It reads the connection itself: a timeout inside the buffered
// reader would be kept and handed to the next answer's read.
func (c *receiverConn) closedByPeer() bool {
	if c.br.Buffered() > 0 {
		return true
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	var one [1]byte
	_, err := c.Conn.Read(one[:])
	_ = c.SetReadDeadline(time.Time{})
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

func hostOnly(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

// put keeps c for the next request to its receiver.
func (p *connPool) put(key string, c *receiverConn) {
	c.idleSince = time.Now()
	_ = c.SetDeadline(time.Time{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*receiverConn{}
	}
	if len(p.idle[key]) >= maxIdlePerReceiver {
		_ = c.Close()
		return
	}
	p.idle[key] = append(p.idle[key], c)
}

// closeIdle closes every kept connection.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			_ = c.Close()
		}
	}
}

// answer is a receiver's response, read.
type answer struct {
	status int
	header http.Header
	body   []byte
	// reusable tells whether the connection may carry another request.
	reusable bool
}

// post sends one request and reads its answer, keeping body bytes up to
// keep and reading up to drain more so the connection can be reused. A
// kept-alive connection the receiver closed meanwhile fails before any
// answer; the request is then sent once more on a new connection (a
// receiver may see a delivery twice, which the webhook-id lets it notice;
// deliveries are at least once anyway).
func (p *connPool) post(ctx context.Context, t target, header map[string]string, body []byte, keep, drain int64) (answer, error) {
	for {
		c, reused, err := p.get(ctx, t)
		if err != nil {
			return answer{}, err
		}
		a, started, err := exchange(ctx, c, t, header, body, keep, drain)
		if err == nil {
			if a.reusable {
				p.put(t.key, c)
			} else {
				_ = c.Close()
			}
			return a, nil
		}
		_ = c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) && contextEnding(ctx) {
			// The connection's deadline is the context's (or set when it
			// is cancelled) and may fire a moment before the context
			// reports it: report the context's error, as http.Client does.
			<-ctx.Done()
			return answer{}, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		if reused && !started && ctx.Err() == nil {
			continue
		}
		return answer{}, err
	}
}

// contextEnding tells whether ctx is done or due within a moment.
func contextEnding(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < 50*time.Millisecond
}

// exchange writes the request and reads the answer on c. started tells
// whether any of the answer arrived.
func exchange(ctx context.Context, c *receiverConn, t target, header map[string]string, body []byte, keep, drain int64) (a answer, started bool, err error) {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	w := c.bw
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", t.requestURI, t.host, len(body))
	for k, v := range header {
		w.WriteString(textproto.CanonicalMIMEHeaderKey(k))
		w.WriteString(": ")
		w.WriteString(v)
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return answer{}, false, err
	}
	// The header is read within maxResponseHeaderBytes from the network
	// (the reader's read-ahead included); the body is bounded by keep and
	// drain.
	c.in.left = maxResponseHeaderBytes
	if _, err := c.br.Peek(1); err != nil {
		return answer{}, false, err
	}
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return answer{}, true, err
	}
	c.in.left = -1
	defer res.Body.Close()
	a = answer{status: res.StatusCode, header: res.Header}
	if a.body, err = io.ReadAll(io.LimitReader(res.Body, keep)); err != nil {
		return answer{}, true, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(res.Body, drain))
	if err != nil {
		return answer{}, true, err
	}
	a.reusable = !res.Close
	if n == drain {
		// Maybe a longer answer than we read: the rest would be taken
		// for the next answer, so the connection goes unless it ended.
		var one [1]byte
		if m, _ := res.Body.Read(one[:]); m > 0 {
			a.reusable = false
		}
	}
	return a, true, nil
}
