// Package sessions holds the use cases of browser sessions (the
// dashboard's): signing in with an API key and secret, resuming a session
// from its token on each request, and signing out. The cookie that
// carries the token and the session's CSRF token are the HTTP edge's
// (adapters/edge).
//
// A session lives in the database (Store), so every replica knows it; the
// browser holds only a random token, and the database only the token's
// keyed hash. A session ends after Options.IdleTimeout without use, after
// Options.MaxAge in any case, when it is signed out, and as soon as the
// credential it was signed in with is revoked (checked on every use).
package sessions

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Defaults of Options.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxAge      = 12 * time.Hour
)

// purposeToken keeps the token hash apart from every other keyed hash of
// the server key.
const purposeToken = "session-token"

// tokenBytes is the randomness of a token: 256 bits, so that a token can
// be neither guessed nor enumerated, and a fast keyed hash is a safe way
// to store it.
const tokenBytes = 32

// tokenLength is the length of a token as text (unpadded base64url).
var tokenLength = base64.RawURLEncoding.EncodedLen(tokenBytes)

// Options tune a Service; the zero value takes the defaults.
type Options struct {
	// IdleTimeout ends a session unused for this long;
	// DefaultIdleTimeout when 0.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after sign-in, however busy;
	// DefaultMaxAge when 0.
	MaxAge time.Duration
	// TouchEvery is how stale a session's LastSeenAt may get before a use
	// writes it again: uses closer together cost one read and no write.
	// The idle timeout is then measured from up to TouchEvery before the
	// last use. A twentieth of IdleTimeout, at most a minute, when 0.
	TouchEvery time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service runs the session use cases.
type Service struct {
	store Store
	creds Credentials
	keys  Keyring
	opts  Options
}

// NewService builds the session use cases over their store, the account
// credentials and the server keyring.
func NewService(store Store, creds Credentials, keys Keyring, opts Options) *Service {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.TouchEvery <= 0 {
		opts.TouchEvery = min(time.Minute, opts.IdleTimeout/20)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: store, creds: creds, keys: keys, opts: opts}
}

// Issued is a new session with its token, which exists only here and in
// the browser it is given to.
type Issued struct {
	Token   string
	Session Session
	// Ends is when the session ends whatever happens (MaxAge after
	// sign-in): the cookie need not outlive it.
	Ends time.Time
}

// SignIn checks an API key and secret as every API request does and, when
// they are right, starts a session for their account. A wrong key or
// secret is the same Unauthenticated error as on the API.
func (s *Service) SignIn(ctx context.Context, key, secret string) (Issued, error) {
	p, err := s.creds.Authenticate(ctx, key, secret, false)
	if err != nil {
		return Issued{}, err
	}
	token := NewToken()
	now := s.opts.Now().UTC()
	sess := Session{
		TokenHash: s.hash(token), AccountID: p.AccountID, CredentialID: p.CredentialID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: s.expiry(now, now),
	}
	if err := s.store.InsertSession(ctx, sess); err != nil {
		return Issued{}, fmt.Errorf("start session: %w", err)
	}
	return Issued{Token: token, Session: sess, Ends: now.Add(s.opts.MaxAge)}, nil
}

// Resume returns who the session of token acts as, and moves its idle
// timeout on: a request of the signed-in browser. Unauthenticated when
// the token is unknown or malformed, the session ended (idle, too old,
// signed out) or its credential was revoked.
func (s *Service) Resume(ctx context.Context, token string) (accounts.Principal, error) {
	now := s.opts.Now()
	sess, err := s.find(ctx, token, now)
	if err != nil {
		return accounts.Principal{}, err
	}
	if now.Sub(sess.LastSeenAt) >= s.opts.TouchEvery {
		if err := s.store.TouchSession(ctx, sess.TokenHash, now.UTC(), s.expiry(sess.CreatedAt, now)); err != nil {
			return accounts.Principal{}, fmt.Errorf("touch session: %w", err)
		}
	}
	return sess.Principal(), nil
}

// Check is Resume without moving the idle timeout on: for a long-lived
// connection (a WebSocket) that checks again that its session still
// holds, which is no use of the session by its browser.
func (s *Service) Check(ctx context.Context, token string) (accounts.Principal, error) {
	sess, err := s.find(ctx, token, s.opts.Now())
	if err != nil {
		return accounts.Principal{}, err
	}
	return sess.Principal(), nil
}

// find reads the live session of token at now.
func (s *Service) find(ctx context.Context, token string, now time.Time) (Session, error) {
	if !WellFormedToken(token) {
		return Session{}, failure.Unauthenticated()
	}
	hash := s.hash(token)
	sess, err := s.store.Session(ctx, hash)
	if failure.Is(err, failure.KindNotFound) {
		return Session{}, failure.Unauthenticated()
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	// The store found it by this hash; compared again in constant time
	// so that no store's lookup is trusted with the decision.
	if !hmac.Equal(sess.TokenHash, hash) {
		return Session{}, failure.Unauthenticated()
	}
	// The stored expiry, or the one the current settings give, whichever
	// comes first: shortening the timeouts applies to running sessions.
	if !now.Before(sess.ExpiresAt) || !now.Before(s.expiry(sess.CreatedAt, sess.LastSeenAt)) {
		return Session{}, failure.Unauthenticated()
	}
	if err := s.creds.Verify(ctx, sess.Principal()); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// SignOut ends the session of token; an unknown or ended one is no error.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if !WellFormedToken(token) {
		return nil
	}
	if err := s.store.DeleteSession(ctx, s.hash(token)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// expiry is when a session created at created and last seen at seen ends.
func (s *Service) expiry(created, seen time.Time) time.Time {
	idle, aged := seen.Add(s.opts.IdleTimeout), created.Add(s.opts.MaxAge)
	if aged.Before(idle) {
		return aged.UTC()
	}
	return idle.UTC()
}

func (s *Service) hash(token string) []byte { return s.keys.Hash(purposeToken, token) }

// NewToken returns a fresh random token of 256 bits as unpadded base64url:
// it can be neither guessed nor enumerated, and a fast keyed hash is a
// safe way to store it.
func NewToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// WellFormedToken reports whether token can be one of NewToken's, so
// that garbage costs no hash and no read.
func WellFormedToken(token string) bool {
	if len(token) != tokenLength {
		return false
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
