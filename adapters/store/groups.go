package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// groupColumnsRow is a thread with its group columns (empty for an
// individual thread).
type groupColumnsRow struct {
	bun.BaseModel `bun:"table:threads"`
	threadRow
	Description  string         `bun:"description"`
	PictureURL   string         `bun:"picture_url"`
	InviteCode   sql.NullString `bun:"invite_code"`
	Announcement bool           `bun:"announcement"`
	Locked       bool           `bun:"locked"`
	InviteLink   string         `bun:"invite_link"`
	Creating     bool           `bun:"creating"`
}

const groupColumns = threadColumns + ", description, picture_url, invite_code, announcement, locked, invite_link, creating"

func (r MessagingStore) groupFrom(ctx context.Context, row groupColumnsRow) (messaging.GroupState, error) {
	g := messaging.GroupState{
		Thread: row.threadRow.domain(), Description: row.Description, PictureURL: row.PictureURL,
		InviteCode: row.InviteCode.String, Announcement: row.Announcement, Locked: row.Locked,
		InviteLink: row.InviteLink, Creating: row.Creating,
	}
	var err error
	g.Members, err = r.Participants(ctx, g.Thread.ID)
	return g, err
}

// Group reads a group thread with its members; inside a transaction the
// group stays locked until it ends.
func (r MessagingStore) Group(ctx context.Context, accountID, threadID string) (messaging.GroupState, error) {
	var row groupColumnsRow
	if err := r.selectOne(ctx, &row, "SELECT "+groupColumns+" FROM threads WHERE id = $1 AND account_id = $2 AND type = 'group'"+r.lockForUpdate(), threadID, accountID); err != nil {
		return messaging.GroupState{}, translate(err, "group")
	}
	return r.groupFrom(ctx, row)
}

// GroupByInviteCode finds a group of an account by its invite code.
func (r MessagingStore) GroupByInviteCode(ctx context.Context, accountID, code string) (messaging.GroupState, error) {
	var row groupColumnsRow
	if err := r.selectOne(ctx, &row, "SELECT "+groupColumns+" FROM threads WHERE invite_code = $1 AND account_id = $2 AND type = 'group'"+r.lockForUpdate(), code, accountID); err != nil {
		return messaging.GroupState{}, translate(err, "group")
	}
	return r.groupFrom(ctx, row)
}

func eventToRow(e event.Event) eventRow {
	return eventRow{ID: e.ID, AccountID: e.AccountID, Type: string(e.Type), ThreadID: nullable(e.ThreadID), Payload: string(e.Payload), CreatedAt: e.CreatedAt}
}

type eventRow struct {
	bun.BaseModel `bun:"table:events"`
	ID            string         `bun:"id"`
	AccountID     string         `bun:"account_id"`
	Type          string         `bun:"type"`
	ThreadID      sql.NullString `bun:"thread_id"`
	Payload       string         `bun:"payload"`
	CreatedAt     time.Time      `bun:"created_at"`
}

// groupToRow is a new group as inserted.
func groupToRow(g messaging.GroupState) groupColumnsRow {
	return groupColumnsRow{threadRow: threadToRow(g.Thread), Description: g.Description, PictureURL: g.PictureURL,
		InviteCode: nullable(g.InviteCode), Announcement: g.Announcement, Locked: g.Locked, InviteLink: g.InviteLink, Creating: g.Creating}
}
