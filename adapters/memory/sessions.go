package memory

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

var _ sessions.Store = (*Repos)(nil)

// SessionStore is the sessions' store (sessions.Store), as
// store.DB.SessionStore is.
func (db *DB) SessionStore() sessions.Store { return db.Repos() }

func cloneSession(s sessions.Session) sessions.Session {
	s.TokenHash = bytes.Clone(s.TokenHash)
	s.CreatedAt, s.LastSeenAt, s.ExpiresAt = utc(s.CreatedAt), utc(s.LastSeenAt), utc(s.ExpiresAt)
	return s
}

// InsertSession stores a new session; its token hash is unique, and its
// credential must exist.
func (r *Repos) InsertSession(ctx context.Context, s sessions.Session) error {
	return r.write(ctx, func(t *tables) error {
		if _, ok := t.sessions[string(s.TokenHash)]; ok {
			return taken("session")
		}
		if _, ok := t.credentials[s.CredentialID]; !ok {
			return foreignKey("credential", s.CredentialID)
		}
		t.sessions[string(s.TokenHash)] = cloneSession(s)
		return nil
	})
}

// Session reads the session of a token hash.
func (r *Repos) Session(ctx context.Context, tokenHash []byte) (sessions.Session, error) {
	var out sessions.Session
	err := r.read(ctx, func(t *tables) error {
		s, ok := t.sessions[string(tokenHash)]
		if !ok {
			return failure.NotFound("session")
		}
		out = cloneSession(s)
		return nil
	})
	return out, err
}

// TouchSession moves a live session's last use and expiry forward.
func (r *Repos) TouchSession(ctx context.Context, tokenHash []byte, seen, expires time.Time) error {
	seen, expires = utc(seen), utc(expires)
	return r.write(ctx, func(t *tables) error {
		s, ok := t.sessions[string(tokenHash)]
		if !ok || !s.LastSeenAt.Before(seen) || !s.ExpiresAt.After(seen) {
			return nil
		}
		s.LastSeenAt, s.ExpiresAt = seen, expires
		t.sessions[string(tokenHash)] = s
		return nil
	})
}

// DeleteSession deletes a session.
func (r *Repos) DeleteSession(ctx context.Context, tokenHash []byte) error {
	return r.write(ctx, func(t *tables) error {
		delete(t.sessions, string(tokenHash))
		return nil
	})
}

// PruneSessions deletes the sessions expired at now.
func (r *Repos) PruneSessions(ctx context.Context, now time.Time) (int, error) {
	n, now := 0, utc(now)
	err := r.write(ctx, func(t *tables) error {
		for k, s := range t.sessions {
			if !s.ExpiresAt.After(now) {
				delete(t.sessions, k)
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	return n, nil
}
