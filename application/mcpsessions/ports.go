package mcpsessions

import (
	"context"
	"time"
)

// Session is an MCP session as every replica of a deployment sees it. The
// session id a client holds is never stored: IDHash, its keyed hash, is
// the row's key.
type Session struct {
	IDHash    []byte
	AccountID string
	// State is the protocol state a replica resumes the session from (the
	// client's initialize parameters and the negotiated version, as the
	// MCP SDK encodes them); empty until the session is initialized.
	State     []byte
	CreatedAt time.Time
	// LastSeenAt is the last request that moved the session on (see
	// Options.TouchEvery).
	LastSeenAt time.Time
	// ExpiresAt is when the session ends unless a request comes before:
	// LastSeenAt plus the idle timeout, or, before initialize completed,
	// CreatedAt plus Options.InitTimeout.
	ExpiresAt time.Time
}

// Initialized reports whether the session's initialize completed.
func (s Session) Initialized() bool { return len(s.State) > 0 }

// Store keeps the MCP sessions and their resource subscriptions where
// every replica sees them (the database). Implementations are safe for
// concurrent use.
//
// Errors: Session returns a failure of kind NotFound for a missing
// session; InsertSession one of kind Conflict when the hash is taken;
// every method returns one of kind Unavailable when the database is away.
// Other errors are infrastructure failures.
type Store interface {
	// InsertSession stores s if its account holds fewer than limit
	// sessions live at s.CreatedAt (ExpiresAt after it), and reports
	// whether it did. The count and the insert are one atomic step: two
	// replicas inserting at once never both take the last place.
	InsertSession(ctx context.Context, s Session, limit int) (bool, error)
	// Session reads the session of a hash, expired or not. NotFound.
	Session(ctx context.Context, idHash []byte) (Session, error)
	// SetSessionState stores the session's protocol state and moves its
	// LastSeenAt to seen and ExpiresAt to expires. A missing session is
	// NotFound.
	SetSessionState(ctx context.Context, idHash []byte, state []byte, seen, expires time.Time) error
	// TouchSession moves LastSeenAt to seen and ExpiresAt to expires, only
	// forward: an older touch changes nothing, and so does one of a
	// session that had expired at seen. A missing session is no error.
	TouchSession(ctx context.Context, idHash []byte, seen, expires time.Time) error
	// DeleteSession deletes the session and its subscriptions; a missing
	// one is no error.
	DeleteSession(ctx context.Context, idHash []byte) error
	// LiveSessions returns those of idHashes whose sessions exist and are
	// live at now (ExpiresAt after it), in no particular order.
	LiveSessions(ctx context.Context, idHashes [][]byte, now time.Time) ([][]byte, error)
	// AddSubscription subscribes the session to a resource; again is no
	// error. A missing session is NotFound.
	AddSubscription(ctx context.Context, idHash []byte, uri string) error
	// RemoveSubscription ends a subscription; a missing one is no error.
	RemoveSubscription(ctx context.Context, idHash []byte, uri string) error
	// Subscribers returns those of idHashes whose sessions are subscribed
	// to uri, in no particular order.
	Subscribers(ctx context.Context, idHashes [][]byte, uri string) ([][]byte, error)
	// PruneSessions deletes the sessions that expired at or before now,
	// with their subscriptions, and returns how many sessions it deleted.
	PruneSessions(ctx context.Context, now time.Time) (int, error)
}

// Keyring hashes session ids with the server key: the same purpose and
// value always hash the same, and nobody without the key can compute it.
type Keyring interface {
	Hash(purpose, value string) []byte
}
