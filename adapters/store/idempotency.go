package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/idempotency"
)

var _ idempotency.Store = IdempotencyKeys{}

// Idempotency keys live in two tables: idempotency_keys holds each key's
// claim (the request's fingerprint, until when its holder may run, when
// the key was first used), idempotency_responses its answer. The answer's
// primary key is what makes a key answer once: a second answer fails its
// transaction, and with it the work it would have answered.

// IdempotencyKeys keeps idempotency keys, their claims and their answers.
type IdempotencyKeys struct{ db *DB }

// IdempotencyKeys returns the idempotency key store.
func (db *DB) IdempotencyKeys() IdempotencyKeys { return IdempotencyKeys{db} }

// idempotencyResponseRow is one key's answer.
type idempotencyResponseRow struct {
	bun.BaseModel `bun:"table:idempotency_responses"`
	AccountID     string    `bun:"account_id,pk"`
	Key           string    `bun:"key,pk"`
	StatusCode    int       `bun:"status_code"`
	Body          []byte    `bun:"body"`
	CreatedAt     time.Time `bun:"created_at"`
}

// ReserveKey implements idempotency.Store in one transaction. The insert
// comes first, with ON CONFLICT DO NOTHING, so that two first uses of a key
// cannot both win; the loser then reads (on Postgres, locks) the winner's
// claim with its answer, if any, and decides from them.
func (k IdempotencyKeys) ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (idempotency.Reservation, error) {
	db := k.db
	var out idempotency.Reservation
	err := db.Transact(ctx, func(ctx context.Context, r *Conn) error {
		res, err := r.write.NewRaw(`INSERT INTO idempotency_keys (account_id, key, fingerprint, locked_until, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_id, key) DO NOTHING`,
			accountID, key, fingerprint, now.Add(lockFor), now).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			out = idempotency.Reservation{Outcome: idempotency.New}
			return nil
		}
		lock := ""
		if db.dialect == Postgres {
			lock = " FOR UPDATE OF k"
		}
		var row struct {
			Fingerprint string        `bun:"fingerprint"`
			LockedUntil *time.Time    `bun:"locked_until"`
			CreatedAt   time.Time     `bun:"created_at"`
			StatusCode  sql.NullInt64 `bun:"status_code"`
			Body        []byte        `bun:"body"`
		}
		if err := r.write.NewRaw(`SELECT k.fingerprint, k.locked_until, k.created_at, a.status_code, a.body
			FROM idempotency_keys AS k
			LEFT JOIN idempotency_responses AS a ON a.account_id = k.account_id AND a.key = k.key
			WHERE k.account_id = ? AND k.key = ?`+lock,
			accountID, key).Scan(ctx, &row); err != nil {
			return err
		}
		claim := func() error {
			_, err := r.write.NewRaw("UPDATE idempotency_keys SET fingerprint = ?, locked_until = ? WHERE account_id = ? AND key = ?",
				fingerprint, now.Add(lockFor), accountID, key).Exec(ctx)
			out = idempotency.Reservation{Outcome: idempotency.New}
			return err
		}
		switch {
		case now.Sub(row.CreatedAt) > idempotency.Window:
			// Expired: the key starts a new life, without its answer.
			if _, err := r.write.NewRaw("DELETE FROM idempotency_responses WHERE account_id = ? AND key = ?", accountID, key).Exec(ctx); err != nil {
				return err
			}
			_, err := r.write.NewRaw("UPDATE idempotency_keys SET fingerprint = ?, locked_until = ?, created_at = ? WHERE account_id = ? AND key = ?",
				fingerprint, now.Add(lockFor), now, accountID, key).Exec(ctx)
			out = idempotency.Reservation{Outcome: idempotency.New}
			return err
		case row.StatusCode.Valid && row.Fingerprint != fingerprint:
			out = idempotency.Reservation{Outcome: idempotency.Mismatch}
		case row.StatusCode.Valid:
			out = idempotency.Reservation{Outcome: idempotency.Replay,
				Response: idempotency.Response{Status: int(row.StatusCode.Int64), Body: row.Body}}
		case row.LockedUntil == nil:
			// Released after a server error: the key is free again, for
			// this request or another.
			return claim()
		case row.Fingerprint != fingerprint:
			out = idempotency.Reservation{Outcome: idempotency.Mismatch}
		case row.LockedUntil.After(now):
			out = idempotency.Reservation{Outcome: idempotency.InFlight, LockedUntil: *row.LockedUntil}
		default:
			// The holder died without an answer: take the key over.
			return claim()
		}
		return nil
	})
	if err != nil {
		return idempotency.Reservation{}, fmt.Errorf("reserve idempotency key: %w", err)
	}
	return out, nil
}

// CompleteKey records the response of a reserved key; an answer recorded
// first (in the work's own transaction, or by a request that took the key
// over) is kept.
func (k IdempotencyKeys) CompleteKey(ctx context.Context, accountID, key string, res idempotency.Response) error {
	db := k.db
	_, err := db.write.NewInsert().Model(&idempotencyResponseRow{
		AccountID: accountID, Key: key, StatusCode: res.Status, Body: nonNilBytes(res.Body), CreatedAt: db.now().UTC(),
	}).On("CONFLICT (account_id, key) DO NOTHING").Returning("NULL").Exec(ctx)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ReleaseKey frees a reserved key: its claim lapses at once. The claim row
// stays, so that an answer that did commit (a commit whose outcome the
// request could not see) is still found and replayed.
func (k IdempotencyKeys) ReleaseKey(ctx context.Context, accountID, key string) error {
	db := k.db
	_, err := db.write.NewRaw("UPDATE idempotency_keys SET locked_until = NULL WHERE account_id = ? AND key = ?", accountID, key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PruneIdempotencyKeys deletes keys older than the replay window, with
// their answers.
func (k IdempotencyKeys) PruneIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	db := k.db
	cutoff := now.Add(-idempotency.Window)
	var n int64
	err := db.Transact(ctx, func(ctx context.Context, r *Conn) error {
		if _, err := r.write.NewRaw(`DELETE FROM idempotency_responses WHERE EXISTS (SELECT 1 FROM idempotency_keys AS k
			WHERE k.account_id = idempotency_responses.account_id AND k.key = idempotency_responses.key AND k.created_at < ?)`, cutoff).Exec(ctx); err != nil {
			return err
		}
		res, err := r.write.NewRaw("DELETE FROM idempotency_keys WHERE created_at < ?", cutoff).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune idempotency keys: %w", err)
	}
	return n, nil
}
