package store

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
)

var _ idempotency.Store = (*DB)(nil)

// ReserveKey implements idempotency.Store in one transaction. The insert
// comes first, with ON CONFLICT DO NOTHING, so that two first uses of a key
// cannot both win; the loser then reads (on Postgres, locks) the winner's
// row and decides from it.
func (db *DB) ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (idempotency.Reservation, error) {
	var out idempotency.Reservation
	err := db.Transact(ctx, func(ctx context.Context, r *Repos) error {
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
			lock = " FOR UPDATE"
		}
		var row struct {
			Fingerprint string     `bun:"fingerprint"`
			StatusCode  int        `bun:"status_code"`
			Body        []byte     `bun:"body"`
			LockedUntil *time.Time `bun:"locked_until"`
			CreatedAt   time.Time  `bun:"created_at"`
		}
		if err := r.write.NewRaw("SELECT fingerprint, status_code, body, locked_until, created_at FROM idempotency_keys WHERE account_id = ? AND key = ?"+lock,
			accountID, key).Scan(ctx, &row); err != nil {
			return err
		}
		switch {
		case now.Sub(row.CreatedAt) > idempotency.Window:
			// Expired: the key starts a new life.
			_, err := r.write.NewRaw(`UPDATE idempotency_keys SET fingerprint = ?, status_code = 0, body = NULL, locked_until = ?, created_at = ?
				WHERE account_id = ? AND key = ?`, fingerprint, now.Add(lockFor), now, accountID, key).Exec(ctx)
			out = idempotency.Reservation{Outcome: idempotency.New}
			return err
		case row.Fingerprint != fingerprint:
			out = idempotency.Reservation{Outcome: idempotency.Mismatch}
		case row.StatusCode != 0:
			out = idempotency.Reservation{Outcome: idempotency.Replay, Status: row.StatusCode, Body: row.Body}
		case row.LockedUntil != nil && row.LockedUntil.After(now):
			out = idempotency.Reservation{Outcome: idempotency.InFlight}
		default:
			// The holder died without completing: take the key over.
			_, err := r.write.NewRaw("UPDATE idempotency_keys SET locked_until = ? WHERE account_id = ? AND key = ?", now.Add(lockFor), accountID, key).Exec(ctx)
			out = idempotency.Reservation{Outcome: idempotency.New}
			return err
		}
		return nil
	})
	if err != nil {
		return idempotency.Reservation{}, fmt.Errorf("reserve idempotency key: %w", err)
	}
	return out, nil
}

// CompleteKey stores the response of a reserved key.
func (db *DB) CompleteKey(ctx context.Context, accountID, key string, status int, body []byte) error {
	_, err := db.write.NewRaw("UPDATE idempotency_keys SET status_code = ?, body = ?, locked_until = NULL WHERE account_id = ? AND key = ?",
		status, body, accountID, key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ReleaseKey forgets a reserved key.
func (db *DB) ReleaseKey(ctx context.Context, accountID, key string) error {
	_, err := db.write.NewRaw("DELETE FROM idempotency_keys WHERE account_id = ? AND key = ?", accountID, key).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PruneIdempotencyKeys deletes keys older than the replay window.
func (db *DB) PruneIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	res, err := db.write.NewRaw("DELETE FROM idempotency_keys WHERE created_at < ?", now.Add(-idempotency.Window)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune idempotency keys: %w", err)
	}
	return res.RowsAffected()
}
