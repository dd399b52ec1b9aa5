package mcp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/mcpsessions"
)

// Sessions are the MCP sessions as every replica sees them (the
// database); *mcpsessions.Service implements them. A session id answers
// only for its own account.
type Sessions interface {
	// Open starts a session of accountID, not yet initialized, and returns
	// its id. RateLimited (too_many_sessions) beyond the account's cap.
	Open(ctx context.Context, accountID string) (string, mcpsessions.Session, error)
	// Find returns the live session of id for accountID; NotFound when it
	// is unknown, ended, or another account's.
	Find(ctx context.Context, id, accountID string) (mcpsessions.Session, error)
	// Initialized stores the protocol state of a session whose initialize
	// completed.
	Initialized(ctx context.Context, idHash, state []byte) error
	// Touch moves a session's idle timeout on for a request.
	Touch(ctx context.Context, s mcpsessions.Session) error
	// End ends a session for every replica.
	End(ctx context.Context, idHash []byte) error
	// Live returns those of idHashes whose sessions have not ended.
	Live(ctx context.Context, idHashes [][]byte) ([][]byte, error)
	// Subscribe, Unsubscribe and Subscribers keep the sessions' resource
	// subscriptions.
	Subscribe(ctx context.Context, idHash []byte, uri string) error
	Unsubscribe(ctx context.Context, idHash []byte, uri string) error
	Subscribers(ctx context.Context, idHashes [][]byte, uri string) ([][]byte, error)
	// Hash is the keyed hash of a session id.
	Hash(id string) []byte
	// MaxPerAccount is the cap on an account's open sessions.
	MaxPerAccount() int
}

var _ Sessions = (*mcpsessions.Service)(nil)

// local is what this replica holds of one session: the SDK's server
// session, opened here by initialize or resumed here from the stored
// state for a request of a session opened elsewhere. Any replica may hold
// one for the same session at the same time; the database says whether
// the session lives.
type local struct {
	key       string // hex of hash
	hash      []byte
	accountID string
	ss        *sdk.ServerSession
	transport *sdk.StreamableServerTransport
	// conn is the transport's connection, through which the session's
	// event stream is sent resource updates.
	conn sdk.Connection
	// resumed: the session was initialized elsewhere and resumed here.
	resumed bool

	// The fields below are guarded by locals.mu.
	// initialized: the session's state is stored (initialize completed).
	initialized bool
	// active counts the requests being served, streams the event streams
	// (GETs) open here.
	active, streams int
	// lastUsed is when the last request here ended.
	lastUsed time.Time
	closed   bool
}

// locals are the sessions this replica holds, by the hex of their id's
// hash and by their SDK session.
type locals struct {
	server *sdk.Server
	mu     sync.Mutex
	byKey  map[string]*local
	bySS   map[*sdk.ServerSession]*local
	closed bool
}

func newLocals(server *sdk.Server) *locals {
	return &locals{server: server, byKey: map[string]*local{}, bySS: map[*sdk.ServerSession]*local{}}
}

// capture keeps the connection of the transport it wraps, so that the
// session's event stream can be written to.
type capture struct {
	*sdk.StreamableServerTransport
	conn sdk.Connection
}

func (c *capture) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := c.StreamableServerTransport.Connect(ctx)
	c.conn = conn
	return conn, err
}

// acquire returns the session this replica holds for id, opening it from
// s (its stored state) when it holds none, for one more request; release
// gives the request back. nil when the replica is shutting down or the
// stored state is unreadable.
func (l *locals) acquire(id string, s mcpsessions.Session) (*local, error) {
	key := hex.EncodeToString(s.IDHash)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClosed
	}
	if got := l.byKey[key]; got != nil {
		got.active++
		return got, nil
	}
	var state *sdk.ServerSessionState
	if s.Initialized() {
		state = new(sdk.ServerSessionState)
		if err := json.Unmarshal(s.State, state); err != nil {
			return nil, err
		}
		// The client's initialized notification was sent to whichever
		// replica; here the session is past it.
		if state.InitializeParams != nil && state.InitializedParams == nil {
			state.InitializedParams = new(sdk.InitializedParams)
		}
	}
	t := &capture{StreamableServerTransport: &sdk.StreamableServerTransport{SessionID: id}}
	ss, err := l.server.Connect(context.Background(), t, &sdk.ServerSessionOptions{State: state})
	if err != nil {
		return nil, err
	}
	got := &local{key: key, hash: s.IDHash, accountID: s.AccountID, ss: ss, transport: t.StreamableServerTransport, conn: t.conn,
		resumed: s.Initialized(), initialized: s.Initialized(), active: 1}
	l.byKey[key], l.bySS[ss] = got, got
	return got, nil
}

// release gives back a request acquire counted.
func (l *locals) release(s *local, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.active--
	s.lastUsed = now
}

// of finds the session held here that an SDK session is.
func (l *locals) of(ss *sdk.ServerSession) (*local, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.bySS[ss]
	return s, ok
}

// markInitialized records that a session's state is stored.
func (l *locals) markInitialized(s *local) {
	l.mu.Lock()
	s.initialized = true
	l.mu.Unlock()
}

// isInitialized reports whether a session's state is stored.
func (l *locals) isInitialized(s *local) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.initialized
}

// stream counts an event stream of s open here (delta 1) or ended (-1).
func (l *locals) stream(s *local, delta int) {
	l.mu.Lock()
	s.streams += delta
	l.mu.Unlock()
}

// drop forgets s and closes its SDK session, which ends its event stream
// and its requests here (closing waits for the calls in flight, so it
// runs on a goroutine of its own). It changes nothing in the database.
func (l *locals) drop(s *local) {
	l.mu.Lock()
	if s.closed {
		l.mu.Unlock()
		return
	}
	s.closed = true
	if l.byKey[s.key] == s {
		delete(l.byKey, s.key)
	}
	delete(l.bySS, s.ss)
	l.mu.Unlock()
	go func() { _ = s.ss.Close() }()
}

// all are the sessions held here.
func (l *locals) all() []*local {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*local, 0, len(l.byKey))
	for _, s := range l.byKey {
		out = append(out, s)
	}
	return out
}

// idle are the sessions held here that no request or stream used since
// before.
func (l *locals) idle(before time.Time) []*local {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*local
	for _, s := range l.byKey {
		if s.active == 0 && s.streams == 0 && s.lastUsed.Before(before) {
			out = append(out, s)
		}
	}
	return out
}

// streaming are the hashes of accountID's sessions with an event stream
// open here, with the sessions by the hex of their hash.
func (l *locals) streaming(accountID string) ([][]byte, map[string]*local) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hashes [][]byte
	byKey := map[string]*local{}
	for key, s := range l.byKey {
		if s.accountID == accountID && s.streams > 0 {
			hashes = append(hashes, s.hash)
			byKey[key] = s
		}
	}
	return hashes, byKey
}

// close ends every session held here (not in the database: they go on on
// the other replicas) and refuses new ones.
func (l *locals) close() {
	l.mu.Lock()
	l.closed = true
	held := make([]*local, 0, len(l.byKey))
	for _, s := range l.byKey {
		held = append(held, s)
	}
	l.mu.Unlock()
	for _, s := range held {
		l.mu.Lock()
		s.closed = true
		delete(l.byKey, s.key)
		delete(l.bySS, s.ss)
		l.mu.Unlock()
		_ = s.ss.Close()
	}
}

func (l *locals) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// count is how many sessions of accountID this replica holds.
func (l *locals) count(accountID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.byKey {
		if s.accountID == accountID {
			n++
		}
	}
	return n
}

// sweep ends, every interval until ctx ends, the sessions held here that
// ended elsewhere (deleted by another replica, revoked, expired), and
// forgets those no request used here for localIdle (they live on in the
// database, and are resumed at their next request).
func (h *Handler) sweep(ctx context.Context, interval, localIdle time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range h.locals.idle(h.now().Add(-localIdle)) {
			h.locals.drop(s)
		}
		held := h.locals.all()
		if len(held) == 0 {
			continue
		}
		hashes := make([][]byte, len(held))
		for i, s := range held {
			hashes[i] = s.hash
		}
		live, err := h.deps.Sessions.Live(ctx, hashes)
		if err != nil {
			// The database away says nothing of the sessions.
			continue
		}
		alive := make(map[string]bool, len(live))
		for _, hash := range live {
			alive[hex.EncodeToString(hash)] = true
		}
		for _, s := range held {
			if !alive[s.key] && h.locals.isInitialized(s) {
				h.locals.drop(s)
			}
		}
	}
}

// notifyUpdated sends a resource update to the event streams open here of
// accountID's sessions subscribed to uri, wherever they subscribed.
func (h *Handler) notifyUpdated(ctx context.Context, accountID, uri string) error {
	hashes, byKey := h.locals.streaming(accountID)
	if len(hashes) == 0 {
		return nil
	}
	subscribed, err := h.deps.Sessions.Subscribers(ctx, hashes, uri)
	if err != nil {
		return err
	}
	params, err := json.Marshal(&sdk.ResourceUpdatedNotificationParams{URI: uri})
	if err != nil {
		return err
	}
	for _, hash := range subscribed {
		s := byKey[hex.EncodeToString(hash)]
		if s == nil {
			continue
		}
		// Without a request's context the transport writes to the
		// session's event stream; a stream that just ended refuses it.
		_ = s.conn.Write(ctx, &jsonrpc.Request{Method: "notifications/resources/updated", Params: params})
	}
	return nil
}
