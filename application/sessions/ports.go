package sessions

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
)

// Session is a signed-in browser's state on the server. The token the
// browser holds is never stored: TokenHash, its keyed hash, is the row's
// key.
type Session struct {
	TokenHash    []byte
	AccountID    string
	CredentialID string
	CreatedAt    time.Time
	// LastSeenAt is the last request that moved the session on (see
	// Options.TouchEvery).
	LastSeenAt time.Time
	// ExpiresAt is when the session ends unless it is seen again before:
	// the earlier of LastSeenAt plus the idle timeout and CreatedAt plus
	// the maximum age.
	ExpiresAt time.Time
}

// Principal is who the session acts as.
func (s Session) Principal() accounts.Principal {
	return accounts.Principal{AccountID: s.AccountID, CredentialID: s.CredentialID}
}

// Store keeps the sessions where every replica of a deployment sees them
// (the database). Implementations are safe for concurrent use.
//
// Errors: Session returns a failure of kind NotFound for a missing
// session; InsertSession one of kind Conflict when the token hash is
// taken; every method returns one of kind Unavailable when the database is
// away. Other errors are infrastructure failures.
type Store interface {
	// InsertSession stores a new session. Conflict when its token hash is
	// taken.
	InsertSession(ctx context.Context, s Session) error
	// Session reads the session of a token hash, expired or not. NotFound.
	Session(ctx context.Context, tokenHash []byte) (Session, error)
	// TouchSession moves the session's LastSeenAt to seen and ExpiresAt
	// to expires, only forward: a touch older than the stored LastSeenAt
	// changes nothing, and neither does one of a session that had
	// expired at seen (it stays ended). A missing session is no error.
	TouchSession(ctx context.Context, tokenHash []byte, seen, expires time.Time) error
	// DeleteSession deletes the session; a missing one is no error.
	DeleteSession(ctx context.Context, tokenHash []byte) error
	// PruneSessions deletes the sessions that expired at or before now
	// and returns how many it deleted.
	PruneSessions(ctx context.Context, now time.Time) (int, error)
}

// Credentials are the API credentials sessions are signed in with;
// *accounts.Service implements them.
type Credentials interface {
	// Authenticate checks a key and its secret (keyOnly false), as every
	// API request's authentication does. Unauthenticated when refused.
	Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error)
	// Verify checks that p's credential is still usable (not revoked).
	// Unauthenticated when it is not.
	Verify(ctx context.Context, p accounts.Principal) error
}

var _ Credentials = (*accounts.Service)(nil)

// Keyring hashes tokens with the server key: the same purpose and value
// always hash the same, and nobody without the key can compute it.
type Keyring interface {
	Hash(purpose, value string) []byte
}
