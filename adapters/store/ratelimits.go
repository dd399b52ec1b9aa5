package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RateBuckets keeps the token buckets of rate limits shared by replicas.
type RateBuckets struct{ db *DB }

// RateBuckets returns the rate-limit bucket store.
func (db *DB) RateBuckets() RateBuckets { return RateBuckets{db} }

// bucketSQL writes REFILL, a bucket's tokens refilled since updated_at
// and capped at the burst, and the dialect's functions into expr, whose
// arguments are bucketArgs: ?0 the key, ?1 the burst, ?2 now in
// microseconds, ?3 the rate per microsecond, ?4 a count.
func (db *DB) bucketSQL(expr string) string {
	const refill = "LEAST(?1, rate_buckets.tokens + GREATEST(0, ?2 - rate_buckets.updated_at) * ?3)"
	expr = strings.ReplaceAll(expr, "REFILL", refill)
	if db.dialect == SQLite {
		// SQLite's two-argument MIN and MAX are scalar; whole tokens are
		// never negative, so truncation is the floor.
		expr = strings.NewReplacer("LEAST(", "MIN(", "GREATEST(", "MAX(", "FLOOR(", "CAST(").Replace(expr)
		expr = strings.ReplaceAll(expr, "#floor", " AS INTEGER)")
	} else {
		expr = strings.ReplaceAll(expr, "#floor", ")")
	}
	return expr
}

func bucketArgs(key string, perSecond float64, burst int, now time.Time, count int) []any {
	return []any{key, float64(max(burst, 1)), micros(now), perSecond / 1e6, count}
}

// TakeTokens refills key's bucket at perSecond up to burst and takes up
// to want whole tokens from it, in one statement (the row lock orders
// concurrent replicas). Errors: the database's.
func (b RateBuckets) TakeTokens(ctx context.Context, key string, want int, perSecond float64, burst int, now time.Time) (int, float64, error) {
	db := b.db
	args := bucketArgs(key, perSecond, burst, now, want)
	query := db.bucketSQL(`INSERT INTO rate_buckets (key, tokens, taken, updated_at)
		VALUES (?0, ?1 - LEAST(?4, ?1), LEAST(?4, ?1), ?2)
		ON CONFLICT (key) DO UPDATE SET
			taken = LEAST(?4, FLOOR(REFILL#floor),
			tokens = REFILL - LEAST(?4, FLOOR(REFILL#floor),
			updated_at = GREATEST(rate_buckets.updated_at, ?2)
		RETURNING taken, tokens`)
	var out struct {
		Taken  int     `bun:"taken"`
		Tokens float64 `bun:"tokens"`
	}
	if err := db.write.NewRaw(query, args...).Scan(ctx, &out); err != nil {
		return 0, 0, fmt.Errorf("take rate-limit tokens: %w", err)
	}
	return out.Taken, out.Tokens, nil
}

// ReturnTokens gives n unspent tokens back to key's bucket, capped at the
// burst; a bucket pruned meanwhile is full already. Errors: the database's.
func (b RateBuckets) ReturnTokens(ctx context.Context, key string, n int, perSecond float64, burst int, now time.Time) error {
	db := b.db
	args := bucketArgs(key, perSecond, burst, now, n)
	_, err := db.write.NewRaw(db.bucketSQL(`UPDATE rate_buckets
		SET tokens = LEAST(?1, REFILL + ?4), updated_at = GREATEST(rate_buckets.updated_at, ?2)
		WHERE key = ?0`), args...).Exec(ctx)
	if err != nil {
		return fmt.Errorf("return rate-limit tokens: %w", err)
	}
	return nil
}

// PruneBuckets deletes the buckets untouched since before. Errors: the
// database's.
func (b RateBuckets) PruneBuckets(ctx context.Context, before time.Time) (int, error) {
	db := b.db
	res, err := db.write.NewRaw("DELETE FROM rate_buckets WHERE updated_at < ?", micros(before)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune rate-limit buckets: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
