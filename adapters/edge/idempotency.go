package edge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// DefaultIdempotencyLock is how long a request holds its idempotency key
// when nothing else is configured: a request's deadline (10 s) and a
// margin. A retry of a request that died takes its key over after that.
const DefaultIdempotencyLock = 15 * time.Second

// MaxIdempotencyKey is the longest idempotency key accepted, in bytes.
const MaxIdempotencyKey = 255

// Idempotency is the idempotency-key protocol, the same on every
// transport: REST's routes, MCP's tools and GraphQL's mutations.
//
// A keyed request goes through Stripe's atomic phases. Begin reserves the
// key in a transaction of its own. The request's work runs. Held.Finish
// records the answer, or releases the key after a failure of the server's.
// Where the work records its own answer (AnswerWith), the answer commits
// in the transaction of the work, so a crash at any point leaves either
// nothing or the work with its answer. Elsewhere the answer commits after
// the work, and a crash between the two commits leaves work without an
// answer, which a retry runs again once the claim lapses.
//
// The same key within idempotency.Window with the same request replays the
// first answer and runs nothing. With another request it is the conflict
// idempotency_key_reused. While the first request holds it, it is the
// conflict idempotency_key_in_use with a Retry-After.
type Idempotency struct {
	store idempotency.Store
	lock  time.Duration
	now   func() time.Time
	log   *slog.Logger
}

// NewIdempotency keeps keys in store, each held for at most lock by its
// request (DefaultIdempotencyLock when 0). A nil store turns the protocol
// off: Begin runs every request as if it had no key.
func NewIdempotency(store idempotency.Store, lock time.Duration, now func() time.Time, log *slog.Logger) *Idempotency {
	if lock <= 0 {
		lock = DefaultIdempotencyLock
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Idempotency{store: store, lock: lock, now: now, log: log}
}

// KeyWords are how a transport names the key and a request to its client,
// in the protocol's refusals.
type KeyWords struct {
	// In and Name are the field of the key in a too-long-key failure:
	// In "header", Name "Idempotency-Key" for REST.
	In, Name string
	// Request names one keyed request: "request", "call".
	Request string
	// Different names another request with the same key: "a different
	// request", "different arguments".
	Different string
}

// HeaderWords are the words of the Idempotency-Key header.
var HeaderWords = KeyWords{In: "header", Name: "Idempotency-Key", Request: "request", Different: "a different request"}

// Fingerprint identifies a request within its account's keys: kind says
// what was asked (a method and path, a tool, a GraphQL operation), body
// with what.
func Fingerprint(kind string, body []byte) string {
	sum := sha256.New()
	sum.Write([]byte(kind + "\n"))
	sum.Write(body)
	return hex.EncodeToString(sum.Sum(nil))
}

// Begin reserves key for a request of accountID with fingerprint.
//
// Without a key, or without a store, Begin returns nothing: the request
// runs without the protocol. A new key returns a Held the caller must
// Finish. A replayed key returns the first answer, and the request must
// not run. A refusal returns an error: Invalid for a key longer than
// MaxIdempotencyKey, Conflict for a key reused or in use, or the store's.
func (p *Idempotency) Begin(ctx context.Context, words KeyWords, accountID, key, fingerprint string) (*Held, *idempotency.Response, error) {
	if p == nil || p.store == nil || key == "" {
		return nil, nil, nil
	}
	if len(key) > MaxIdempotencyKey {
		return nil, nil, failure.Invalid(failure.FieldError{In: words.In, Path: []any{words.Name}, Type: "string_too_long",
			Message: words.Name + " must be at most 255 characters"})
	}
	now := p.now()
	res, err := p.store.ReserveKey(ctx, accountID, key, fingerprint, now, p.lock)
	if err != nil {
		return nil, nil, err
	}
	switch res.Outcome {
	case idempotency.Replay:
		return nil, &res.Response, nil
	case idempotency.Mismatch:
		return nil, nil, failure.Conflict("idempotency_key_reused", "this "+words.Name+" was used with "+words.Different)
	case idempotency.InFlight:
		return nil, nil, &failure.Error{Kind: failure.KindConflict, Code: "idempotency_key_in_use",
			Message:    "a " + words.Request + " with this " + words.Name + " is still being processed",
			RetryAfter: max(time.Second, res.LockedUntil.Sub(now))}
	}
	return &Held{p: p, accountID: accountID, key: key}, nil, nil
}

// Held is a reserved key whose request is running.
type Held struct {
	p              *Idempotency
	accountID, key string
}

// AnswerWith asks a use case to record render's answer to its result in
// the transaction of its work. A nil Held (no key) asks for nothing.
func AnswerWith[T any](h *Held, render func(T) idempotency.Response) *idempotency.Completion[T] {
	if h == nil {
		return nil
	}
	return &idempotency.Completion[T]{AccountID: h.accountID, Key: h.key, Render: render}
}

// Ending is how a keyed request ended, which decides what Finish keeps.
type Ending int

// The endings.
const (
	// Answered: the request has an answer to keep for the key (a success,
	// or a refusal, which did no work).
	Answered Ending = iota
	// AnsweredWithWork: the work recorded its answer in its own
	// transaction (AnswerWith); nothing more is kept.
	AnsweredWithWork
	// ServerFailed: the server failed; the key is released for a retry. A
	// key whose work committed with its answer keeps that answer.
	ServerFailed
)

// Finish ends the request that holds h: it records res (Answered), keeps
// what the work recorded (AnsweredWithWork), or releases the key
// (ServerFailed). A failure to record or release is logged, not returned:
// the claim lapses by itself, and the client has its answer.
func (h *Held) Finish(ctx context.Context, ending Ending, res idempotency.Response) {
	if h == nil {
		return
	}
	switch ending {
	case AnsweredWithWork:
	case ServerFailed:
		// The request's own deadline may have passed: the release gets a
		// second of its own. When the database is away it fails, and the
		// claim lapses by itself (a retry meanwhile gets
		// idempotency_key_in_use with Retry-After).
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		err := h.p.store.ReleaseKey(release, h.accountID, h.key)
		if err != nil && !failure.Is(err, failure.KindUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			h.p.log.WarnContext(ctx, "release idempotency key", "error", err.Error())
		}
	default:
		if err := h.p.store.CompleteKey(ctx, h.accountID, h.key, res); err != nil {
			h.p.log.WarnContext(ctx, "store idempotent answer", "error", err.Error())
		}
	}
}
