// Package idempotency is the port behind the Idempotency-Key header: a
// request with a key already seen within 24 hours gets the first response
// again and changes nothing; the same key with another request is refused.
//
// A key goes through three phases, each its own transaction: reserved
// (ReserveKey), answered (its response recorded), and replayed. Where a
// request's work must not happen twice (a send), the response is recorded
// in the transaction of that work (Completion, written as an Answer of the
// work's writes.Batch): either both the
// work and its answer commit, or neither does, so a retry after a crash at
// any point either replays the answer or runs the request once. Other
// routes record theirs after the work (CompleteKey), and keep a window
// between the two commits.
package idempotency

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Window is how long a key is remembered.
const Window = 24 * time.Hour

// Outcome is what reserving a key found.
type Outcome int

// The outcomes.
const (
	// New: the caller holds the key and must record a response for it or
	// release it.
	New Outcome = iota
	// Replay: the key was used for the same request; Response is its
	// answer.
	Replay
	// Mismatch: the key was used for a different request.
	Mismatch
	// InFlight: the same request is still being handled, at most until
	// LockedUntil.
	InFlight
)

// Response is a keyed request's answer, kept for replays.
type Response struct {
	Status int
	Body   []byte
}

// Reservation is the result of reserving a key.
type Reservation struct {
	Outcome Outcome
	// Response is the answer to replay (Replay).
	Response Response
	// LockedUntil is when the holder's claim lapses (InFlight).
	LockedUntil time.Time
}

// Store keeps keys and responses per account.
type Store interface {
	// ReserveKey claims key for a request with the given fingerprint, for
	// at most lockFor; a claim older than that, or released, is taken
	// over (its holder died or failed). A key with a response is never
	// taken over before the Window ends: it replays.
	ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (Reservation, error)
	// CompleteKey records the response of a reserved key in its own
	// transaction; a key that already has a response keeps it.
	CompleteKey(ctx context.Context, accountID, key string, res Response) error
	// ReleaseKey gives up a key whose request failed on the server's
	// side, so that the client can retry with it at once. A key whose
	// response was recorded keeps it: releasing never undoes an answer.
	ReleaseKey(ctx context.Context, accountID, key string) error
}

// ErrAnsweredElsewhere is the failure of recording a response for a key
// that has one: the work was not done, and a retry replays the other
// request's answer.
var ErrAnsweredElsewhere = &failure.Error{
	Kind: failure.KindConflict, Code: "idempotency_key_in_use",
	Message:    "another request with this Idempotency-Key was answered first; retry to get its response",
	RetryAfter: time.Second,
}

// Completion asks a use case to record, in the transaction of its work,
// the answer to its result under a key. Render turns the result into the
// response the interface will send; it must be pure, as the transaction's
// work may run more than once.
type Completion[T any] struct {
	AccountID string
	Key       string
	Render    func(T) Response
}
