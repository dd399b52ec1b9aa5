// Package idempotency is the port behind the Idempotency-Key header: a
// request with a key already seen within 24 hours gets the first response
// again and changes nothing; the same key with another request is refused.
package idempotency

import (
	"context"
	"time"
)

// Window is how long a key is remembered.
const Window = 24 * time.Hour

// Outcome is what reserving a key found.
type Outcome int

// The outcomes.
const (
	// New: the caller holds the key and must complete or release it.
	New Outcome = iota
	// Replay: the key was used for the same request; Status and Body are
	// its response.
	Replay
	// Mismatch: the key was used for a different request.
	Mismatch
	// InFlight: the same request is still being handled.
	InFlight
)

// Reservation is the result of reserving a key.
type Reservation struct {
	Outcome Outcome
	Status  int
	Body    []byte
}

// Store keeps keys and responses per account.
type Store interface {
	// ReserveKey claims key for a request with the given fingerprint, for
	// at most lockFor; a claim older than that is taken over (its holder
	// died).
	ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (Reservation, error)
	// CompleteKey stores the response for replays.
	CompleteKey(ctx context.Context, accountID, key string, status int, body []byte) error
	// ReleaseKey forgets a key whose request failed on the server's side,
	// so the client can retry with it.
	ReleaseKey(ctx context.Context, accountID, key string) error
}
