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
}

const groupColumns = threadColumns + ", description, picture_url, invite_code, announcement, locked"

func (r MessagingStore) groupFrom(ctx context.Context, row groupColumnsRow) (messaging.GroupState, error) {
	g := messaging.GroupState{
		Thread: row.threadRow.domain(), Description: row.Description, PictureURL: row.PictureURL,
		InviteCode: row.InviteCode.String, Announcement: row.Announcement, Locked: row.Locked,
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

// InsertGroup stores a new group thread and its members.
func (r MessagingStore) InsertGroup(ctx context.Context, g messaging.GroupState) error {
	if err := r.InsertThread(ctx, g.Thread, g.Members); err != nil {
		return err
	}
	return r.saveGroupColumns(ctx, g)
}

// SaveGroup stores a group's state and its members, writing only what
// changed: members who stay keep their join time.
func (r MessagingStore) SaveGroup(ctx context.Context, g messaging.GroupState) error {
	if err := r.saveGroupColumns(ctx, g); err != nil {
		return err
	}
	current, err := r.Participants(ctx, g.Thread.ID)
	if err != nil {
		return err
	}
	keep := map[string]messaging.Participant{}
	for _, m := range g.Members {
		keep[m.Address] = m
	}
	for _, c := range current {
		m, stays := keep[c.Address]
		switch {
		case !stays:
			if _, err := r.write.NewDelete().Model((*participantRow)(nil)).Where("thread_id = ? AND address = ?", g.Thread.ID, c.Address).Exec(ctx); err != nil {
				return translate(err, "participant")
			}
		case m.Admin != c.Admin || m.IsAgent != c.IsAgent:
			if _, err := r.write.NewUpdate().Model((*participantRow)(nil)).Set("admin = ?", m.Admin).Set("is_agent = ?", m.IsAgent).
				Where("thread_id = ? AND address = ?", g.Thread.ID, c.Address).Exec(ctx); err != nil {
				return translate(err, "participant")
			}
		}
		delete(keep, c.Address)
	}
	if len(keep) == 0 {
		return nil
	}
	rows := make([]participantRow, 0, len(keep))
	for _, m := range g.Members {
		if _, added := keep[m.Address]; added {
			rows = append(rows, participantRow{ThreadID: g.Thread.ID, Address: m.Address, Name: m.Name, Admin: m.Admin, IsAgent: m.IsAgent, JoinedAt: g.Thread.UpdatedAt})
		}
	}
	_, err = r.write.NewInsert().Model(&rows).Exec(ctx)
	return translate(err, "participant")
}

func (r MessagingStore) saveGroupColumns(ctx context.Context, g messaging.GroupState) error {
	res, err := r.write.NewUpdate().Model((*threadRow)(nil)).
		Set("name = ?", g.Thread.Name).Set("description = ?", g.Description).Set("picture_url = ?", g.PictureURL).
		Set("invite_code = ?", nullable(g.InviteCode)).Set("announcement = ?", g.Announcement).Set("locked = ?", g.Locked).
		Set("updated_at = ?", g.Thread.UpdatedAt).
		Where("id = ? AND type = 'group'", g.Thread.ID).Exec(ctx)
	if err != nil {
		return translate(err, "group")
	}
	return requireOneRow(res, "group")
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
		InviteCode: nullable(g.InviteCode), Announcement: g.Announcement, Locked: g.Locked}
}
