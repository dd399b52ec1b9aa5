package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// MaxInitBytes bounds a socket's first message, its connection_init:
// credentials and a few headers. Later messages may be as long as a
// request body (MaxBodyBytes).
const MaxInitBytes = 16 << 10

// websocketBadInit is the close code of a socket whose connection_init
// payload is not a JSON object: graphql-transport-ws's Bad Request.
const websocketBadInit = 4400

// guardedSockets accepts WebSockets through inner and holds each to the
// rules gqlgen's transport leaves to us: the first message is read with
// the smaller limit MaxInitBytes, and a connection_init whose payload is
// not a JSON object closes the socket with 4400 (gqlgen would return
// without closing it). ServeHTTP of the public handler closes every
// socket it accepted once gqlgen is done with it, whatever path gqlgen
// took.
type guardedSockets struct {
	inner transport.WebsocketImplementation
}

// acceptedSocket receives the socket accepted for a request, so that the
// handler that served it can close it.
type acceptedSocket struct{ conn transport.WebsocketConn }

type acceptedSocketKey struct{}

func (g guardedSockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	c, err := g.inner.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	gc := &guardedSocket{WebsocketConn: c, limit: -1}
	if held, ok := r.Context().Value(acceptedSocketKey{}).(*acceptedSocket); ok {
		held.conn = gc
	}
	return gc, nil
}

// closeAccepted serves r with serve and then closes the socket serve
// accepted, if any and if still open.
func closeAccepted(w http.ResponseWriter, r *http.Request, serve http.Handler) {
	held := &acceptedSocket{}
	serve.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), acceptedSocketKey{}, held)))
	if held.conn != nil {
		_ = held.conn.Close()
	}
}

// guardedSocket is one accepted socket. gqlgen reads it from one goroutine
// at a time, and sets its read limit before the first read.
type guardedSocket struct {
	transport.WebsocketConn
	// limit is the read limit gqlgen asked for, -1 when none.
	limit int64
	// initRead is set once the first message was read.
	initRead bool
}

// SetReadLimit keeps the limit for the messages after the first, which is
// read with MaxInitBytes at most.
func (c *guardedSocket) SetReadLimit(limit int64) {
	c.limit = limit
	if c.initRead {
		c.setLimit(limit)
		return
	}
	c.setLimit(min(limit, MaxInitBytes))
}

func (c *guardedSocket) setLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

// SetReadDeadline passes the deadline on, when the socket takes one.
func (c *guardedSocket) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

var (
	_ transport.WebsocketReadLimiter   = (*guardedSocket)(nil)
	_ transport.WebsocketReadDeadliner = (*guardedSocket)(nil)
)

// errBadInit ends a socket whose connection_init payload is not an object.
var errBadInit = errors.New("the connection_init payload must be a JSON object")

// NextReader reads the next message; the first one is checked.
func (c *guardedSocket) NextReader() (int, io.Reader, error) {
	if c.initRead {
		return c.WebsocketConn.NextReader()
	}
	if c.limit < 0 {
		c.setLimit(MaxInitBytes)
	}
	typ, r, err := c.WebsocketConn.NextReader()
	if err != nil {
		return typ, r, err
	}
	first, err := io.ReadAll(r)
	if err != nil {
		return typ, nil, err
	}
	c.initRead = true
	if c.limit >= 0 {
		c.setLimit(c.limit)
	}
	var m struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	// A message that is not JSON at all is gqlgen's to refuse.
	if json.Unmarshal(first, &m) == nil && m.Type == "connection_init" && !objectOrNull(m.Payload) {
		_ = c.WriteClose(websocketBadInit, errBadInit.Error())
		return typ, nil, errBadInit
	}
	return typ, bytes.NewReader(first), nil
}

// objectOrNull reports whether raw, a JSON value or nothing, is an object,
// null or absent.
func objectOrNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{' || string(raw) == "null"
}

// DefaultSocketsPerAccount bounds the WebSockets of one account on one
// process: a console tab holds one, an agent process one.
const DefaultSocketsPerAccount = 100

// socketCounts counts each account's open sockets on this process.
type socketCounts struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newSocketCounts(max int) *socketCounts {
	if max <= 0 {
		max = DefaultSocketsPerAccount
	}
	return &socketCounts{max: max, n: map[string]int{}}
}

// open counts a socket of accountID until ctx ends (the socket's request
// is over); false, counting nothing, when the account is at its limit.
func (c *socketCounts) open(ctx context.Context, accountID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[accountID] >= c.max {
		return false
	}
	c.n[accountID]++
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[accountID]--; c.n[accountID] <= 0 {
			delete(c.n, accountID)
		}
	})
	return true
}
