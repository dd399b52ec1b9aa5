package harness

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// PGProxy is a TCP proxy between Postgres clients and their server that counts what
// the clients ask for: the statements they run, by leading keyword, and the
// transactions these make up. It reads the client side of the wire protocol (version
// 3, in clear: the clients must connect with sslmode=disable) and forwards every byte
// unchanged, so a server behind it runs as it would without it, with one more hop per
// round trip. It counts; it is never in the way of a timed measurement.
//
// Counting on the wire is how the harness learns the statements per operation of a
// Switchboard server: pg_stat_statements needs a server restart to load, and the
// server's own query hooks are not reachable from outside its process.
type PGProxy struct {
	// URL is the upstream URL with the proxy's address in place of the server's, and
	// sslmode=disable.
	URL string

	ln       net.Listener
	upstream string
	mu       sync.Mutex
	counts   StatementCounts
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// StatementCounts is what clients ran through a PGProxy.
type StatementCounts struct {
	// Statements counts executed statements by their first keyword, upper-cased
	// ("SELECT", "INSERT", "BEGIN", "NOTIFY", ...): each simple query message, and
	// each Execute of the extended protocol.
	Statements map[string]int
	// Transactions counts explicit transaction blocks (BEGIN or START TRANSACTION)
	// and statements run outside a block, each of which is a transaction of its own.
	Transactions int
	// Unparsed counts connections whose traffic the proxy could not follow (TLS,
	// an unknown protocol); their statements are missing from the counts.
	Unparsed int
}

// Total is the number of statements of every keyword.
func (c StatementCounts) Total() int {
	n := 0
	for _, v := range c.Statements {
		n += v
	}
	return n
}

// Sub returns the counts of c minus those of before.
func (c StatementCounts) Sub(before StatementCounts) StatementCounts {
	out := StatementCounts{Statements: map[string]int{}, Transactions: c.Transactions - before.Transactions, Unparsed: c.Unparsed - before.Unparsed}
	for k, v := range c.Statements {
		if d := v - before.Statements[k]; d != 0 {
			out.Statements[k] = d
		}
	}
	return out
}

// StartPGProxy listens on a free 127.0.0.1 port and proxies to the server of
// upstreamURL until Close.
func StartPGProxy(upstreamURL string) (*PGProxy, error) {
	u, err := url.Parse(upstreamURL)
	if err != nil {
		return nil, fmt.Errorf("pg proxy: parse upstream URL: %w", err)
	}
	upstream := u.Host
	if u.Port() == "" {
		upstream = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pg proxy: %w", err)
	}
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	p := &PGProxy{URL: u.String(), ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{},
		counts: StatementCounts{Statements: map[string]int{}}}
	p.wg.Go(p.accept)
	return p, nil
}

// Counts returns a copy of the counts so far.
func (p *PGProxy) Counts() StatementCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	c.Statements = maps.Clone(c.Statements)
	return c
}

// Close stops listening, closes every proxied connection and waits for them.
func (p *PGProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *PGProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// track adds c to the connections Close closes; it reports false, and c must not be
// used, when the proxy is closing.
func (p *PGProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *PGProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *PGProxy) serve(client net.Conn) {
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return // the client sees its connection close, as if the server refused it
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(client, server)
		_ = client.Close() // unblocks the reader below
	}()
	// The client's side is read message by message, counted, then forwarded.
	w := &wireCounter{onStatement: p.statement}
	r := bufio.NewReaderSize(client, 64<<10)
	if err := w.copy(server, r); errors.Is(err, errUnparsed) {
		p.mu.Lock()
		p.counts.Unparsed++
		p.mu.Unlock()
		_, _ = io.Copy(server, r) // still a proxy, if no longer a counter
	}
	_ = server.Close()
	<-done
}

// statement counts one executed statement.
func (p *PGProxy) statement(keyword string, newTransaction bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Statements[keyword]++
	if newTransaction {
		p.counts.Transactions++
	}
}

// errUnparsed means a connection's traffic was not the clear-text protocol 3.
var errUnparsed = errors.New("not a clear-text Postgres protocol 3 stream")

// Codes of the untyped messages a client may open a connection with.
const (
	protocol3     = 196608 // 3.0 startup message
	sslRequest    = 80877103
	gssEncRequest = 80877104
	cancelRequest = 80877102
)

// maxMessage bounds one client message the proxy reads, far above any statement the
// harness drives.
const maxMessage = 64 << 20

// wireCounter follows one client connection: its prepared statements and portals,
// by name, and whether it is inside a transaction block.
type wireCounter struct {
	onStatement func(keyword string, newTransaction bool)
	statements  map[string]string // prepared statement name → keyword
	portals     map[string]string // portal name → keyword
	inBlock     bool
}

// copy forwards the client's messages from r to w, counting each statement, until
// r ends (nil) or a message cannot be parsed (errUnparsed, with what was read before
// it forwarded). Messages that arrived together leave together, in one write.
func (c *wireCounter) copy(w io.Writer, r *bufio.Reader) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	forward := func(msg []byte) error {
		if _, err := bw.Write(msg); err != nil {
			return err
		}
		if r.Buffered() == 0 {
			return bw.Flush()
		}
		return nil
	}
	c.statements, c.portals = map[string]string{}, map[string]string{}
	// Untyped start-up messages: an SSL or GSS encryption request (which the
	// server declines with sslmode=disable) may come before the startup message.
	for {
		msg, err := readMessage(r, false)
		if err != nil {
			return err
		}
		if err := forward(msg); err != nil {
			return nil
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		if code == sslRequest || code == gssEncRequest {
			continue
		}
		if code == cancelRequest {
			return nil
		}
		if code != protocol3 {
			return errUnparsed
		}
		break
	}
	for {
		msg, err := readMessage(r, true)
		if err != nil {
			return err
		}
		c.count(msg[0], msg[5:])
		if err := forward(msg); err != nil {
			return nil
		}
	}
}

// readMessage reads one message: a type byte (typed) and a length that counts itself.
// The end of the stream between messages is nil; anything malformed is errUnparsed.
func readMessage(r *bufio.Reader, typed bool) ([]byte, error) {
	head := 4
	if typed {
		head = 5
	}
	hdr, err := r.Peek(head)
	if err != nil {
		if errors.Is(err, io.EOF) && len(hdr) == 0 {
			return nil, io.EOF
		}
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[head-4:]))
	if n < 4 || n > maxMessage || (!typed && n < 8) {
		return nil, errUnparsed
	}
	msg := make([]byte, head-4+n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// count notes one client message of type typ with body b.
func (c *wireCounter) count(typ byte, b []byte) {
	switch typ {
	case 'Q': // simple query: the query text
		c.executed(keyword(cstring(b)))
	case 'P': // Parse: statement name, query text, ...
		name, rest := cut(b)
		c.statements[name] = keyword(cstring(rest))
	case 'B': // Bind: portal name, statement name, ...
		portal, rest := cut(b)
		c.portals[portal] = c.statements[cstring(rest)]
	case 'E': // Execute: portal name, row limit
		c.executed(c.portals[cstring(b)])
	case 'C': // Close: 'S' statement or 'P' portal, then its name
		if len(b) > 0 {
			if b[0] == 'S' {
				delete(c.statements, cstring(b[1:]))
			} else {
				delete(c.portals, cstring(b[1:]))
			}
		}
	}
}

// executed counts a statement and follows the transaction block it opens or closes.
// A statement with an unknown keyword (an Execute of a statement prepared before the
// proxy saw it) counts as "?".
func (c *wireCounter) executed(kw string) {
	if kw == "" {
		kw = "?"
	}
	switch kw {
	case "BEGIN", "START":
		c.onStatement(kw, true)
		c.inBlock = true
	case "COMMIT", "END", "ROLLBACK", "ABORT":
		c.onStatement(kw, !c.inBlock)
		c.inBlock = false
	default:
		c.onStatement(kw, !c.inBlock)
	}
}

// keyword returns the first word of a statement, upper-cased, after blanks and
// comments.
func keyword(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n(")
		switch {
		case strings.HasPrefix(q, "--"):
			_, q, _ = strings.Cut(q, "\n")
			continue
		case strings.HasPrefix(q, "/*"):
			_, q, _ = strings.Cut(q, "*/")
			continue
		}
		break
	}
	end := strings.IndexFunc(q, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_') })
	if end >= 0 {
		q = q[:end]
	}
	return strings.ToUpper(q)
}

// cstring returns the NUL-terminated string at the start of b.
func cstring(b []byte) string {
	s, _ := cut(b)
	return s
}

// cut splits a NUL-terminated string off b.
func cut(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}
