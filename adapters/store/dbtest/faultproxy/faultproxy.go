// Package faultproxy is a TCP proxy for tests that sits between a server and
// its database and injects the network faults a real Postgres produces: a
// stopped server (Freeze/Thaw), dropped or reset connections (Cut/Reset), slow
// replies (SetDelay), slow connects (SetConnectDelay), refused or silent connects (SetRefuse/SetBlackhole) and a
// reply torn in half (HalfReplyThenReset). It listens on loopback only and
// forwards only to a loopback upstream.
package faultproxy

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from Addr to an upstream server and injects
// faults on demand. All methods are safe for concurrent use.
type Proxy struct {
	t        testing.TB
	upstream string
	ln       net.Listener
	ctx      context.Context // cancelled by Close, aborts dials upstream
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop, every connection and its pumps

	mu        sync.Mutex
	running   chan struct{} // closed while not frozen; Freeze replaces it
	delay     time.Duration
	connDelay time.Duration
	refuse    bool
	blackhole bool
	halfReset bool
	closed    bool
	links     map[*link]struct{}

	closeOnce sync.Once
}

// Start listens on 127.0.0.1:0 and forwards every accepted connection to
// upstream ("host:port"), which must be a loopback address so that a test
// never sends traffic off the machine. It is closed by t.Cleanup.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		t.Fatalf("faultproxy: upstream %q: %v", upstream, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Fatalf("faultproxy: upstream %q is not a loopback address", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	running := make(chan struct{})
	close(running)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{t: t, upstream: upstream, ln: ln, ctx: ctx, cancel: cancel,
		running: running, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's listening address, "127.0.0.1:NNNN"; point clients here
// instead of at the database.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns dbURL (postgres://user@host:port/db?...) with host:port replaced
// by Addr, so a test can hand the system under test a database URL that goes
// through the proxy.
func (p *Proxy) URL(dbURL string) string {
	p.t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		p.t.Fatalf("faultproxy: parse database URL: %v", err)
	}
	u.Host = p.Addr()
	return u.String()
}

// Freeze imitates a database process stopped with SIGSTOP (or a VM paused, or
// a stalled network path): forwarding stops in both directions on every
// connection, current and new. Bytes already read are held, not dropped; new
// connections are still accepted, as the kernel would, but nothing is
// forwarded until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.running:
		p.running = make(chan struct{})
	default: // already frozen
	}
}

// Thaw imitates SIGCONT after Freeze: forwarding resumes everywhere and held
// bytes are delivered in order, so replies that clients may have given up on
// still arrive, as they do from a real server that was stopped.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.running: // not frozen
	default:
		close(p.running)
	}
}

// Cut closes every current connection on both sides with a FIN, as a database
// restart or a killed backend does. Later connections work normally.
func (p *Proxy) Cut() { p.closeLinks(false) }

// Reset is Cut with an RST to the client (SetLinger(0)), as a crashed host, a
// firewall or a load balancer dropping state produces ("connection reset by
// peer"). Later connections work normally.
func (p *Proxy) Reset() { p.closeLinks(true) }

// SetDelay delays each server→client chunk by d before forwarding it, like a
// slow query or a congested network: the reply arrives, but late. 0 turns it
// off.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// SetConnectDelay makes each new connection wait d before it reaches the
// server, like a loaded server slow to start a backend: connecting
// succeeds, but late. 0 turns it off.
func (p *Proxy) SetConnectDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.connDelay = d
}

// SetRefuse makes new connections close at once after accept, like a database
// that is down, restarting or out of connection slots: connecting fails fast.
func (p *Proxy) SetRefuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// SetBlackhole makes new connections be accepted and never answered: nothing
// is forwarded upstream and nothing comes back, like a hung postmaster whose
// kernel still completes the TCP handshake, or a firewall that drops packets
// after connect. Only a client timeout ends the wait.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
}

// HalfReplyThenReset arms a one-shot fault: the next server→client chunk on
// any connection is forwarded only in its first half, then that connection is
// reset, as when a server crashes mid-reply. Clients must treat the torn
// message as an error, not parse it.
func (p *Proxy) HalfReplyThenReset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.halfReset = true
}

// Conns reports the connections currently open through the proxy, so a test
// can check that a client pool opened, kept or dropped what it should.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, closes every connection (frozen ones included) and
// waits for all the proxy's goroutines to end. It is idempotent.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		_ = p.ln.Close()
		p.cancel()
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.closeLinks(false)
		p.wg.Wait()
	})
}

func (p *Proxy) closeLinks(rst bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		l.close(rst)
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// handle owns one client connection from accept to close.
func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	l := &link{client: client, done: make(chan struct{})}
	p.mu.Lock()
	refuse, blackhole, closed, connDelay := p.refuse, p.blackhole, p.closed, p.connDelay
	if !refuse && !closed {
		p.links[l] = struct{}{}
	}
	p.mu.Unlock()
	if refuse || closed {
		_ = client.Close()
		return
	}
	defer func() {
		l.close(false)
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if blackhole {
		<-l.done
		return
	}
	if !p.wait(l) || !p.pause(l, connDelay) { // a frozen server does not accept its backlog
		return
	}
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil || !l.setServer(server) {
		if server != nil {
			_ = server.Close()
		}
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.pump(l, server, client, false)
	}()
	p.pump(l, client, server, true)
}

// pump copies src to dst chunk by chunk, applying Freeze before each read and
// write, and SetDelay and HalfReplyThenReset to replies. It closes the link
// when either side fails or closes.
func (p *Proxy) pump(l *link, dst, src net.Conn, toClient bool) {
	defer l.close(false)
	buf := make([]byte, 32<<10)
	for {
		if !p.wait(l) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if toClient && !p.sleep(l) {
				return
			}
			if !p.wait(l) {
				return
			}
			chunk, tear := buf[:n], toClient && p.takeHalfReset()
			if tear {
				chunk = chunk[:n/2]
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
			if tear {
				l.close(true)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the proxy is frozen; false means the link was closed.
func (p *Proxy) wait(l *link) bool {
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		select {
		case <-running:
			p.mu.Lock()
			still := running == p.running // not frozen again meanwhile
			p.mu.Unlock()
			if still {
				return true
			}
		case <-l.done:
			return false
		}
	}
}

// sleep waits out the reply delay; false means the link was closed.
func (p *Proxy) sleep(l *link) bool {
	p.mu.Lock()
	d := p.delay
	p.mu.Unlock()
	return p.pause(l, d)
}

// pause waits d; false means the link was closed meanwhile.
func (p *Proxy) pause(l *link, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

func (p *Proxy) takeHalfReset() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	armed := p.halfReset
	p.halfReset = false
	return armed
}

// link is one proxied connection: the client side, the server side once
// dialled, and done, closed when both are closed.
type link struct {
	client net.Conn
	done   chan struct{}

	mu     sync.Mutex
	server net.Conn
	closed bool
}

// setServer records the dialled server side; false if the link was closed
// meanwhile (the caller then closes server).
func (l *link) setServer(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.server = server
	return true
}

// close closes both sides once; rst sends an RST to the client instead of a FIN.
func (l *link) close(rst bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if tc, ok := l.client.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = l.client.Close()
	if l.server != nil {
		_ = l.server.Close()
	}
	close(l.done)
}
