package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

type groupColumnsRow struct {
	threadRow
	Description  string         `bun:"description"`
	PictureURL   string         `bun:"picture_url"`
	InviteCode   sql.NullString `bun:"invite_code"`
	Announcement bool           `bun:"announcement"`
	Locked       bool           `bun:"locked"`
}

const groupColumns = threadColumns + ", description, picture_url, invite_code, announcement, locked"

func (r *Repos) groupFrom(ctx context.Context, row groupColumnsRow) (messaging.GroupState, error) {
	g := messaging.GroupState{
		Thread: row.threadRow.domain(), Description: row.Description, PictureURL: row.PictureURL,
		InviteCode: row.InviteCode.String, Announcement: row.Announcement, Locked: row.Locked,
	}
	var err error
	g.Members, err = r.Participants(ctx, g.Thread.ID)
	return g, err
}

// Group reads a group thread with its members.
func (r *Repos) Group(ctx context.Context, accountID, threadID string) (messaging.GroupState, error) {
	var row groupColumnsRow
	if err := r.selectOne(ctx, &row, "SELECT "+groupColumns+" FROM threads WHERE id = $1 AND account_id = $2 AND type = 'group'", threadID, accountID); err != nil {
		return messaging.GroupState{}, translate(err, "group")
	}
	return r.groupFrom(ctx, row)
}

// GroupByInviteCode finds a group of an account by its invite code.
func (r *Repos) GroupByInviteCode(ctx context.Context, accountID, code string) (messaging.GroupState, error) {
	var row groupColumnsRow
	if err := r.selectOne(ctx, &row, "SELECT "+groupColumns+" FROM threads WHERE invite_code = $1 AND account_id = $2 AND type = 'group'", code, accountID); err != nil {
		return messaging.GroupState{}, translate(err, "group")
	}
	return r.groupFrom(ctx, row)
}

// InsertGroup stores a new group thread and its members.
func (r *Repos) InsertGroup(ctx context.Context, g messaging.GroupState) error {
	if err := r.InsertThread(ctx, g.Thread, g.Members); err != nil {
		return err
	}
	return r.saveGroupColumns(ctx, g)
}

// SaveGroup stores a group's state and replaces its members.
func (r *Repos) SaveGroup(ctx context.Context, g messaging.GroupState) error {
	if err := r.saveGroupColumns(ctx, g); err != nil {
		return err
	}
	if _, err := r.write.NewDelete().Model((*participantRow)(nil)).Where("thread_id = ?", g.Thread.ID).Exec(ctx); err != nil {
		return translate(err, "participant")
	}
	if len(g.Members) == 0 {
		return nil
	}
	rows := make([]participantRow, len(g.Members))
	for i, p := range g.Members {
		rows[i] = participantRow{ThreadID: g.Thread.ID, Address: p.Address, Name: p.Name, Admin: p.Admin, IsAgent: p.IsAgent, JoinedAt: g.Thread.UpdatedAt}
	}
	_, err := r.write.NewInsert().Model(&rows).Exec(ctx)
	return translate(err, "participant")
}

func (r *Repos) saveGroupColumns(ctx context.Context, g messaging.GroupState) error {
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

type eventRow struct {
	bun.BaseModel `bun:"table:events"`
	ID            string         `bun:"id"`
	AccountID     string         `bun:"account_id"`
	Type          string         `bun:"type"`
	ThreadID      sql.NullString `bun:"thread_id"`
	Payload       string         `bun:"payload"`
	CreatedAt     time.Time      `bun:"created_at"`
}

// InsertEvent appends to the account's event log.
func (r *Repos) InsertEvent(ctx context.Context, e event.Event) error {
	row := eventRow{ID: e.ID, AccountID: e.AccountID, Type: string(e.Type), ThreadID: nullable(e.ThreadID), Payload: string(e.Payload), CreatedAt: e.CreatedAt}
	_, err := r.write.NewInsert().Model(&row).Exec(ctx)
	return translate(err, "event")
}

// Events lists a thread's events in order, for tests and the thread's
// system history.
func (r *Repos) Events(ctx context.Context, accountID, threadID string) ([]event.Event, error) {
	var rows []eventRow
	if err := r.read.NewSelect().Model(&rows).Where("account_id = ? AND thread_id = ?", accountID, threadID).OrderExpr("seq").Scan(ctx); err != nil {
		return nil, translate(err, "event")
	}
	out := make([]event.Event, len(rows))
	for i, row := range rows {
		out[i] = event.Event{ID: row.ID, AccountID: row.AccountID, Type: event.Type(row.Type), ThreadID: row.ThreadID.String, Payload: []byte(row.Payload), CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}
