package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/sessions"
)

// SessionStore is the storage of the dashboard's sessions (sessions.Store).
type SessionStore struct{ *Conn }

var _ sessions.Store = SessionStore{}

// SessionStore is db's SessionStore, outside any transaction.
func (db *DB) SessionStore() SessionStore { return SessionStore{db.base} }

type sessionRow struct {
	bun.BaseModel `bun:"table:sessions"`
	TokenHash     []byte `bun:"token_hash,pk"`
	AccountID     string `bun:"account_id"`
	CredentialID  string `bun:"credential_id"`
	CreatedAt     int64  `bun:"created_at"`
	LastSeenAt    int64  `bun:"last_seen_at"`
	ExpiresAt     int64  `bun:"expires_at"`
}

func (r sessionRow) domain() sessions.Session {
	return sessions.Session{
		TokenHash: r.TokenHash, AccountID: r.AccountID, CredentialID: r.CredentialID,
		CreatedAt: fromMicros(r.CreatedAt), LastSeenAt: fromMicros(r.LastSeenAt), ExpiresAt: fromMicros(r.ExpiresAt),
	}
}

// InsertSession stores a new session.
func (r SessionStore) InsertSession(ctx context.Context, s sessions.Session) error {
	row := sessionRow{
		TokenHash: s.TokenHash, AccountID: s.AccountID, CredentialID: s.CredentialID,
		CreatedAt: micros(s.CreatedAt), LastSeenAt: micros(s.LastSeenAt), ExpiresAt: micros(s.ExpiresAt),
	}
	_, err := r.write.NewInsert().Model(&row).Exec(ctx)
	return translate(err, "session")
}

// Session reads the session of a token hash.
func (r SessionStore) Session(ctx context.Context, tokenHash []byte) (sessions.Session, error) {
	var row sessionRow
	if err := r.selectOne(ctx, &row, "SELECT token_hash, account_id, credential_id, created_at, last_seen_at, expires_at FROM sessions WHERE token_hash = $1", tokenHash); err != nil {
		return sessions.Session{}, translate(err, "session")
	}
	return row.domain(), nil
}

// TouchSession moves a live session's last use and expiry forward.
func (r SessionStore) TouchSession(ctx context.Context, tokenHash []byte, seen, expires time.Time) error {
	_, err := r.write.NewUpdate().Model((*sessionRow)(nil)).
		Set("last_seen_at = ?", micros(seen)).Set("expires_at = ?", micros(expires)).
		Where("token_hash = ? AND last_seen_at < ? AND expires_at > ?", tokenHash, micros(seen), micros(seen)).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession deletes a session.
func (r SessionStore) DeleteSession(ctx context.Context, tokenHash []byte) error {
	if _, err := r.write.NewDelete().Model((*sessionRow)(nil)).Where("token_hash = ?", tokenHash).Exec(ctx); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// PruneSessions deletes the sessions expired at now.
func (r SessionStore) PruneSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := r.write.NewDelete().Model((*sessionRow)(nil)).Where("expires_at <= ?", micros(now)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
