package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// MCPSessionStore is the storage of the MCP sessions (mcpsessions.Store).
type MCPSessionStore struct{ db *DB }

var _ mcpsessions.Store = MCPSessionStore{}

// MCPSessionStore is db's MCPSessionStore.
func (db *DB) MCPSessionStore() MCPSessionStore { return MCPSessionStore{db} }

type mcpSessionRow struct {
	bun.BaseModel `bun:"table:mcp_sessions"`
	IDHash        []byte         `bun:"id_hash,pk"`
	AccountID     string         `bun:"account_id"`
	State         sql.NullString `bun:"state"`
	CreatedAt     int64          `bun:"created_at"`
	LastSeenAt    int64          `bun:"last_seen_at"`
	ExpiresAt     int64          `bun:"expires_at"`
}

func (r mcpSessionRow) domain() mcpsessions.Session {
	s := mcpsessions.Session{
		IDHash: r.IDHash, AccountID: r.AccountID,
		CreatedAt: fromMicros(r.CreatedAt), LastSeenAt: fromMicros(r.LastSeenAt), ExpiresAt: fromMicros(r.ExpiresAt),
	}
	if r.State.Valid {
		s.State = []byte(r.State.String)
	}
	return s
}

// InsertSession stores s if its account holds fewer than limit live
// sessions: on Postgres under a transaction-scoped advisory lock of the
// account, on SQLite under the one write lock the transaction takes.
func (r MCPSessionStore) InsertSession(ctx context.Context, s mcpsessions.Session, limit int) (bool, error) {
	inserted := false
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		if c.dialect == Postgres {
			if _, err := c.write.NewRaw("SELECT pg_advisory_xact_lock(hashtext(?))", "mcp_sessions:"+s.AccountID).Exec(ctx); err != nil {
				return fmt.Errorf("lock account mcp sessions: %w", err)
			}
		}
		n, err := c.write.NewSelect().Model((*mcpSessionRow)(nil)).
			Where("account_id = ? AND expires_at > ?", s.AccountID, micros(s.CreatedAt)).Count(ctx)
		if err != nil {
			return fmt.Errorf("count mcp sessions: %w", err)
		}
		if n >= limit {
			return nil
		}
		row := mcpSessionRow{
			IDHash: s.IDHash, AccountID: s.AccountID,
			CreatedAt: micros(s.CreatedAt), LastSeenAt: micros(s.LastSeenAt), ExpiresAt: micros(s.ExpiresAt),
		}
		if len(s.State) > 0 {
			row.State = sql.NullString{String: string(s.State), Valid: true}
		}
		if _, err := c.write.NewInsert().Model(&row).Exec(ctx); err != nil {
			return translate(err, "MCP session")
		}
		inserted = true
		return nil
	})
	return inserted, err
}

// Session reads the session of a hash.
func (r MCPSessionStore) Session(ctx context.Context, idHash []byte) (mcpsessions.Session, error) {
	var row mcpSessionRow
	if err := r.db.base.selectOne(ctx, &row,
		"SELECT id_hash, account_id, state, created_at, last_seen_at, expires_at FROM mcp_sessions WHERE id_hash = $1", idHash); err != nil {
		return mcpsessions.Session{}, translate(err, "MCP session")
	}
	return row.domain(), nil
}

// SetSessionState stores a session's protocol state and moves it on.
func (r MCPSessionStore) SetSessionState(ctx context.Context, idHash, state []byte, seen, expires time.Time) error {
	res, err := r.db.base.write.NewUpdate().Model((*mcpSessionRow)(nil)).
		Set("state = ?", string(state)).Set("last_seen_at = ?", micros(seen)).Set("expires_at = ?", micros(expires)).
		Where("id_hash = ?", idHash).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set mcp session state: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return failure.NotFound("MCP session")
	}
	return nil
}

// TouchSession moves a live session's last request and expiry forward.
func (r MCPSessionStore) TouchSession(ctx context.Context, idHash []byte, seen, expires time.Time) error {
	_, err := r.db.base.write.NewUpdate().Model((*mcpSessionRow)(nil)).
		Set("last_seen_at = ?", micros(seen)).Set("expires_at = ?", micros(expires)).
		Where("id_hash = ? AND last_seen_at < ? AND expires_at > ?", idHash, micros(seen), micros(seen)).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("touch mcp session: %w", err)
	}
	return nil
}

// DeleteSession deletes a session; its subscriptions go with it (ON
// DELETE CASCADE).
func (r MCPSessionStore) DeleteSession(ctx context.Context, idHash []byte) error {
	if _, err := r.db.base.write.NewDelete().Model((*mcpSessionRow)(nil)).Where("id_hash = ?", idHash).Exec(ctx); err != nil {
		return fmt.Errorf("delete mcp session: %w", err)
	}
	return nil
}

// LiveSessions returns those of idHashes live at now.
func (r MCPSessionStore) LiveSessions(ctx context.Context, idHashes [][]byte, now time.Time) ([][]byte, error) {
	if len(idHashes) == 0 {
		return nil, nil
	}
	var live [][]byte
	err := r.db.base.read.NewSelect().Model((*mcpSessionRow)(nil)).Column("id_hash").
		Where("id_hash IN ("+placeholders(len(idHashes))+")", hashArgs(idHashes)...).
		Where("expires_at > ?", micros(now)).Scan(ctx, &live)
	if err != nil {
		return nil, fmt.Errorf("read live mcp sessions: %w", err)
	}
	return live, nil
}

// AddSubscription subscribes a session to a resource.
func (r MCPSessionStore) AddSubscription(ctx context.Context, idHash []byte, uri string) error {
	_, err := r.db.base.write.NewRaw(
		"INSERT INTO mcp_session_subscriptions (id_hash, uri) SELECT id_hash, ? FROM mcp_sessions WHERE id_hash = ? ON CONFLICT DO NOTHING",
		uri, idHash).Exec(ctx)
	if err != nil {
		return fmt.Errorf("add mcp subscription: %w", err)
	}
	if _, err := r.Session(ctx, idHash); err != nil {
		return err
	}
	return nil
}

// RemoveSubscription ends a subscription.
func (r MCPSessionStore) RemoveSubscription(ctx context.Context, idHash []byte, uri string) error {
	if _, err := r.db.base.write.NewRaw("DELETE FROM mcp_session_subscriptions WHERE id_hash = ? AND uri = ?", idHash, uri).Exec(ctx); err != nil {
		return fmt.Errorf("remove mcp subscription: %w", err)
	}
	return nil
}

// Subscribers returns those of idHashes subscribed to uri.
func (r MCPSessionStore) Subscribers(ctx context.Context, idHashes [][]byte, uri string) ([][]byte, error) {
	if len(idHashes) == 0 {
		return nil, nil
	}
	var subscribed [][]byte
	err := r.db.base.read.NewRaw("SELECT id_hash FROM mcp_session_subscriptions WHERE uri = ? AND id_hash IN ("+placeholders(len(idHashes))+")",
		append([]any{uri}, hashArgs(idHashes)...)...).Scan(ctx, &subscribed)
	if err != nil {
		return nil, fmt.Errorf("read mcp subscribers: %w", err)
	}
	return subscribed, nil
}

// PruneSessions deletes the sessions expired at now.
func (r MCPSessionStore) PruneSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := r.db.base.write.NewDelete().Model((*mcpSessionRow)(nil)).Where("expires_at <= ?", micros(now)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune mcp sessions: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// placeholders is n bun placeholders separated by commas.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// hashArgs passes hashes as query arguments, one each.
func hashArgs(hashes [][]byte) []any {
	args := make([]any, len(hashes))
	for i, h := range hashes {
		args[i] = h
	}
	return args
}
