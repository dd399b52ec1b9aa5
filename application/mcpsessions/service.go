// Package mcpsessions holds the MCP sessions of the agents' interface
// (/mcp) where every replica sees them, so that a load balancer may send
// each request of a session to any replica: the session's account, its
// protocol state, its idle expiry, the account's cap on open sessions and
// the resources each session is subscribed to.
//
// A client holds a random session id of 256 bits (sessions.NewToken); the database holds only
// its keyed hash. A session id answers only for its own account: looked up
// with another account's credentials, it is not found, as an unknown or
// expired one is.
package mcpsessions

import (
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Defaults of Options.
const (
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultInitTimeout   = time.Minute
	DefaultMaxPerAccount = 100
)

// purposeID keeps the session id hash apart from every other keyed hash of
// the server key.
const purposeID = "mcp-session-id"

// Options tune a Service; the zero value takes the defaults.
type Options struct {
	// IdleTimeout ends a session that has had no request for this long;
	// DefaultIdleTimeout when 0.
	IdleTimeout time.Duration
	// InitTimeout ends a session whose initialize did not complete (its
	// replica died, or the client went away) this long after it began;
	// DefaultInitTimeout when 0. Until then it holds a place of the cap.
	InitTimeout time.Duration
	// MaxPerAccount bounds the sessions an account holds open at once,
	// across every replica; DefaultMaxPerAccount when 0.
	MaxPerAccount int
	// TouchEvery is how stale a session's LastSeenAt may get before a
	// request writes it again: requests closer together cost one read and
	// no write. The idle timeout is then measured from up to TouchEvery
	// before the last request. A thirtieth of IdleTimeout, at most a
	// minute, when 0.
	TouchEvery time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service runs the MCP session use cases.
type Service struct {
	store Store
	keys  Keyring
	opts  Options
}

// NewService builds the session use cases over their store and the server
// keyring.
func NewService(store Store, keys Keyring, opts Options) *Service {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	if opts.MaxPerAccount <= 0 {
		opts.MaxPerAccount = DefaultMaxPerAccount
	}
	if opts.TouchEvery <= 0 {
		opts.TouchEvery = min(time.Minute, opts.IdleTimeout/30)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: store, keys: keys, opts: opts}
}

// IdleTimeout is how long a session may go without a request.
func (s *Service) IdleTimeout() time.Duration { return s.opts.IdleTimeout }

// MaxPerAccount is the cap on an account's open sessions.
func (s *Service) MaxPerAccount() int { return s.opts.MaxPerAccount }

// ErrTooManySessions refuses a session beyond the account's cap.
func (s *Service) errTooManySessions() error {
	return &failure.Error{Kind: failure.KindRateLimited, Code: "too_many_sessions", RetryAfter: time.Minute,
		Message: "this account has " + strconv.Itoa(s.opts.MaxPerAccount) +
			" MCP sessions open; close one (DELETE /mcp) or let one idle out"}
}

// Open starts a session of accountID, not yet initialized, and returns
// its id (which exists only here and in the client it is given to) with
// the session. RateLimited (too_many_sessions) when the account holds its
// cap of open sessions.
func (s *Service) Open(ctx context.Context, accountID string) (string, Session, error) {
	id := sessions.NewToken()
	now := s.opts.Now().UTC()
	sess := Session{IDHash: s.Hash(id), AccountID: accountID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.opts.InitTimeout)}
	ok, err := s.store.InsertSession(ctx, sess, s.opts.MaxPerAccount)
	if err != nil {
		return "", Session{}, fmt.Errorf("open mcp session: %w", err)
	}
	if !ok {
		return "", Session{}, s.errTooManySessions()
	}
	return id, sess, nil
}

// Find returns the live session of id as accountID sees it. NotFound when
// the id is malformed or unknown, the session ended (expired, deleted) or
// belongs to another account: the answers are the same, so that an id
// says nothing to anyone but its account.
func (s *Service) Find(ctx context.Context, id, accountID string) (Session, error) {
	if !sessions.WellFormedToken(id) {
		return Session{}, failure.NotFound("MCP session")
	}
	hash := s.Hash(id)
	sess, err := s.store.Session(ctx, hash)
	if err != nil {
		return Session{}, err
	}
	// The store found it by this hash; compared again in constant time,
	// as the account is, so that no store's lookup is trusted with the
	// decision.
	owner := hmac.Equal(sess.IDHash, hash) && subtle.ConstantTimeCompare([]byte(sess.AccountID), []byte(accountID)) == 1
	if !owner || !sess.ExpiresAt.After(s.opts.Now()) {
		return Session{}, failure.NotFound("MCP session")
	}
	return sess, nil
}

// Initialized stores a session's protocol state once its initialize
// completed; from then on it lives IdleTimeout after each request.
func (s *Service) Initialized(ctx context.Context, idHash, state []byte) error {
	now := s.opts.Now().UTC()
	if err := s.store.SetSessionState(ctx, idHash, state, now, now.Add(s.opts.IdleTimeout)); err != nil {
		return fmt.Errorf("store mcp session state: %w", err)
	}
	return nil
}

// Touch moves an initialized session's idle timeout on for a request; it
// writes only when the stored LastSeenAt is older than TouchEvery.
func (s *Service) Touch(ctx context.Context, sess Session) error {
	now := s.opts.Now().UTC()
	if !sess.Initialized() || now.Sub(sess.LastSeenAt) < s.opts.TouchEvery {
		return nil
	}
	if err := s.store.TouchSession(ctx, sess.IDHash, now, now.Add(s.opts.IdleTimeout)); err != nil {
		return fmt.Errorf("touch mcp session: %w", err)
	}
	return nil
}

// End deletes a session with its subscriptions; every replica then
// answers its id 404 and ends what it serves of it.
func (s *Service) End(ctx context.Context, idHash []byte) error {
	if err := s.store.DeleteSession(ctx, idHash); err != nil {
		return fmt.Errorf("end mcp session: %w", err)
	}
	return nil
}

// Live returns those of idHashes whose sessions have not ended.
func (s *Service) Live(ctx context.Context, idHashes [][]byte) ([][]byte, error) {
	return s.store.LiveSessions(ctx, idHashes, s.opts.Now())
}

// Subscribe subscribes a session to a resource, for every replica.
func (s *Service) Subscribe(ctx context.Context, idHash []byte, uri string) error {
	return s.store.AddSubscription(ctx, idHash, uri)
}

// Unsubscribe ends a session's subscription to a resource.
func (s *Service) Unsubscribe(ctx context.Context, idHash []byte, uri string) error {
	return s.store.RemoveSubscription(ctx, idHash, uri)
}

// Subscribers returns those of idHashes subscribed to uri.
func (s *Service) Subscribers(ctx context.Context, idHashes [][]byte, uri string) ([][]byte, error) {
	return s.store.Subscribers(ctx, idHashes, uri)
}

// Hash is the keyed hash a session id is stored under.
func (s *Service) Hash(id string) []byte { return s.keys.Hash(purposeID, id) }
