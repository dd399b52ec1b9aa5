package memory

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
)

var (
	_ idempotency.Store    = (*DB)(nil)
	_ idempotency.Recorder = (*Repos)(nil)
)

// keyRow is a key's claim: the request's fingerprint, until when its
// holder may run (nil once released), and when the key was first used.
type keyRow struct {
	fingerprint string
	lockedUntil *time.Time
	createdAt   time.Time
}

// answerRow is a key's answer. Its key in tables.answers is what makes a
// key answer once.
type answerRow struct {
	response  idempotency.Response
	createdAt time.Time
}

// ReserveKey implements idempotency.Store in one transaction.
func (db *DB) ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (idempotency.Reservation, error) {
	var out idempotency.Reservation
	err := db.Repos().write(ctx, func(t *tables) error {
		id := pair{accountID, key}
		lockedUntil := utc(now.Add(lockFor))
		claim := keyRow{fingerprint: fingerprint, lockedUntil: &lockedUntil, createdAt: utc(now)}
		k, ok := t.keys[id]
		if !ok {
			t.keys[id] = claim
			out = idempotency.Reservation{Outcome: idempotency.New}
			return nil
		}
		a, answered := t.answers[id]
		switch {
		case now.Sub(k.createdAt) > idempotency.Window:
			// Expired: the key starts a new life, without its answer.
			delete(t.answers, id)
			t.keys[id] = claim
		case answered && k.fingerprint != fingerprint:
			out = idempotency.Reservation{Outcome: idempotency.Mismatch}
			return nil
		case answered:
			out = idempotency.Reservation{Outcome: idempotency.Replay, Response: cloneResponse(a.response)}
			return nil
		case k.lockedUntil != nil && k.fingerprint != fingerprint:
			out = idempotency.Reservation{Outcome: idempotency.Mismatch}
			return nil
		case k.lockedUntil != nil && k.lockedUntil.After(now):
			out = idempotency.Reservation{Outcome: idempotency.InFlight, LockedUntil: *k.lockedUntil}
			return nil
		default:
			// Released, or its holder died without an answer: take the
			// key over, keeping when it was first used.
			claim.createdAt = k.createdAt
			t.keys[id] = claim
		}
		out = idempotency.Reservation{Outcome: idempotency.New}
		return nil
	})
	return out, err
}

// CompleteKey records the response of a reserved key; an answer recorded
// first is kept.
func (db *DB) CompleteKey(ctx context.Context, accountID, key string, res idempotency.Response) error {
	return db.Repos().write(ctx, func(t *tables) error {
		if _, ok := t.answers[pair{accountID, key}]; !ok {
			t.answers[pair{accountID, key}] = answerRow{response: cloneResponse(res), createdAt: utc(db.now())}
		}
		return nil
	})
}

// ReleaseKey frees a reserved key: its claim lapses at once, and an answer
// it has stays.
func (db *DB) ReleaseKey(ctx context.Context, accountID, key string) error {
	return db.Repos().write(ctx, func(t *tables) error {
		if k, ok := t.keys[pair{accountID, key}]; ok {
			k.lockedUntil = nil
			t.keys[pair{accountID, key}] = k
		}
		return nil
	})
}

// RecordResponse implements idempotency.Recorder: the answer is written
// with r's transaction; a key answered already is
// idempotency.ErrAnsweredElsewhere.
func (r *Repos) RecordResponse(ctx context.Context, accountID, key string, res idempotency.Response) error {
	return r.write(ctx, func(t *tables) error { return t.recordAnswer(accountID, key, res, r.db.now()) })
}

func (t *tables) recordAnswer(accountID, key string, res idempotency.Response, now time.Time) error {
	if _, ok := t.answers[pair{accountID, key}]; ok {
		return idempotency.ErrAnsweredElsewhere
	}
	t.answers[pair{accountID, key}] = answerRow{response: cloneResponse(res), createdAt: utc(now)}
	return nil
}

// PruneIdempotencyKeys deletes keys older than the replay window, with
// their answers, and counts the keys.
func (db *DB) PruneIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	cutoff := now.Add(-idempotency.Window)
	var n int64
	err := db.Repos().write(ctx, func(t *tables) error {
		for id, k := range t.keys {
			if k.createdAt.Before(cutoff) {
				delete(t.keys, id)
				delete(t.answers, id)
				n++
			}
		}
		return nil
	})
	return n, err
}

// cloneResponse is an answer as kept: its body never nil (a NOT NULL
// column).
func cloneResponse(res idempotency.Response) idempotency.Response {
	res.Body = text(res.Body)
	return res
}
