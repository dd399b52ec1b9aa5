package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ appmessaging.PageRepos = MessagingStore{}

// threadActivity is the sort key of thread listings: the last message, or
// the creation of a thread that has none yet.
const threadActivity = "COALESCE(last_message_at, created_at)"

// listedLag is how far a thread's listed_at may trail its activity on
// Postgres: its triggers (migration 20261201001000) set listed_at to the
// activity whenever the activity leaves [listed_at, listed_at+listedLag],
// so that most messages update their thread in place. SQLite orders by an
// index on the activity itself.
const listedLag = time.Minute

// threadListing is one listing of an account's threads, most recently
// active first: its conditions, applied to the page and, on Postgres, to
// the floor below which no row of the page can be.
type threadListing struct {
	accountID string
	where     func(*bun.SelectQuery) *bun.SelectQuery
	after     *appmessaging.ThreadCursor
}

// page selects rows [offset, offset+limit) of the listing into rows (all
// from offset when limit is 0).
//
// On Postgres the index is on listed_at, not on the activity: the first
// offset+limit rows in listed_at order have their activity at or above the
// last one's listed_at, b, so the rows of the page have an activity at or
// above b too, and a listed_at at or above b-listedLag. The page reads
// that range of the index and orders it by activity: about the threads
// active in the last minute before the page, not the account's threads.
func (r MessagingStore) page(ctx context.Context, l threadListing, offset, limit int, rows *[]threadRow) error {
	sel := r.listed(r.read.NewSelect().Model((*threadRow)(nil)), l)
	if r.dialect == Postgres && limit > 0 {
		floor := r.listed(r.read.NewSelect().TableExpr("threads").Column("listed_at"), l).
			OrderExpr("listed_at DESC, id DESC").Offset(offset + limit - 1).Limit(1)
		sel = sel.Where(fmt.Sprintf("listed_at >= COALESCE((?) - INTERVAL '%d seconds', '-infinity')", int(listedLag.Seconds())), floor)
	}
	return sel.OrderExpr(threadActivity+" DESC, id DESC").Offset(offset).Limit(limit).Scan(ctx, rows)
}

// withPhone keeps, when phone is set, the threads whose agent number, user
// or a participant is that address.
func withPhone(sel *bun.SelectQuery, phone string) *bun.SelectQuery {
	if phone == "" {
		return sel
	}
	return sel.Where("(agent_number = ? OR contact = ? OR id IN (SELECT thread_id FROM thread_participants WHERE address = ?))", phone, phone, phone)
}

// listed applies the listing's conditions to sel.
func (r MessagingStore) listed(sel *bun.SelectQuery, l threadListing) *bun.SelectQuery {
	sel = l.where(sel.Where("account_id = ?", l.accountID))
	if c := l.after; c != nil {
		// A row value, which both databases read as a range of an index;
		// the equivalent OR form is a filter that reads every newer
		// thread before the page.
		sel = sel.Where("("+threadActivity+", id) < (?, ?)", c.Activity, c.ID)
		if r.dialect == Postgres {
			sel = sel.Where("listed_at <= ?", c.Activity)
		}
	}
	return sel
}

// ThreadPage reads one page of an account's threads, most recently active
// first, in one statement.
func (r MessagingStore) ThreadPage(ctx context.Context, q appmessaging.ThreadPageQuery) ([]appmessaging.PagedThread, error) {
	where := func(sel *bun.SelectQuery) *bun.SelectQuery {
		if q.Filter.Service != "" {
			sel = sel.Where("service = ?", string(q.Filter.Service))
		}
		if q.Filter.Type != "" {
			sel = sel.Where("type = ?", string(q.Filter.Type))
		}
		return withPhone(sel, q.Filter.Phone)
	}
	var rows []threadRow
	if err := r.page(ctx, threadListing{accountID: q.AccountID, where: where, after: q.After}, 0, q.Limit, &rows); err != nil {
		return nil, translate(err, "thread")
	}
	out := make([]appmessaging.PagedThread, len(rows))
	for i, row := range rows {
		activity := row.CreatedAt
		if row.LastMessageAt != nil {
			activity = *row.LastMessageAt
		}
		out[i] = appmessaging.PagedThread{Thread: row.domain(), Cursor: appmessaging.ThreadCursor{Activity: activity.UTC(), ID: row.ID}}
	}
	return out, nil
}

// ThreadsByID reads the account's threads among ids.
func (r MessagingStore) ThreadsByID(ctx context.Context, accountID string, ids []string) ([]messaging.Thread, error) {
	var rows []threadRow
	err := r.read.NewSelect().Model(&rows).Where("account_id = ?", accountID).Where("id IN (?)", bun.List(ids)).Scan(ctx)
	if err != nil {
		return nil, translate(err, "thread")
	}
	out := make([]messaging.Thread, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// ParticipantsOf reads the members of the account's threads among
// threadIDs.
func (r MessagingStore) ParticipantsOf(ctx context.Context, accountID string, threadIDs []string) (map[string][]messaging.Participant, error) {
	var rows []participantRow
	err := r.read.NewRaw(`SELECT p.thread_id, p.address, p.name, p.admin, p.is_agent, p.joined_at
		FROM thread_participants AS p JOIN threads AS t ON t.id = p.thread_id
		WHERE t.account_id = ? AND p.thread_id IN (?)
		ORDER BY p.thread_id, p.is_agent DESC, p.address`, accountID, bun.List(threadIDs)).Scan(ctx, &rows)
	if err != nil {
		return nil, translate(err, "participant")
	}
	out := make(map[string][]messaging.Participant, len(threadIDs))
	for _, p := range rows {
		out[p.ThreadID] = append(out[p.ThreadID], messaging.Participant{Address: p.Address, Name: p.Name, Admin: p.Admin, IsAgent: p.IsAgent})
	}
	return out, nil
}

// The pages of a thread's messages, newest first: ORDER BY
// messagesNewestFirst, and after a cursor AND messagesOlderThan, its
// created_at and id. Both follow the messages_thread_recent index
// (thread_id, created_at DESC, id DESC). The comparison is of row values
// because both Postgres and SQLite turn that into a range of the index
// that starts at the cursor; the equivalent created_at < ? OR (created_at
// = ? AND id < ?) is only a filter to Postgres, which then reads every
// newer message of the thread before the page, like an OFFSET.
const (
	messagesNewestFirst = "created_at DESC, id DESC"
	messagesOlderThan   = "(created_at, id) < (?, ?)"
)

// olderThan is the keyset condition of a page after before, with its
// arguments; nothing for a first page.
func olderThan(before *appmessaging.MessageCursor) (string, []any) {
	if before == nil {
		return "", nil
	}
	return " AND " + messagesOlderThan, []any{before.CreatedAt, before.ID}
}

// ThreadMessages reads up to limit messages of a thread of the account,
// newest first, older than before when it is set: one range of the
// messages_thread_recent index.
func (r MessagingStore) ThreadMessages(ctx context.Context, accountID, threadID string, before *appmessaging.MessageCursor, limit int) ([]messaging.Message, error) {
	cond, condArgs := olderThan(before)
	args := append(append([]any{threadID, accountID}, condArgs...), max(limit, 0))
	var rows []messageRow
	err := r.read.NewRaw(`SELECT `+messageColumns+` FROM messages WHERE thread_id = ? AND account_id = ?`+cond+`
		ORDER BY `+messagesNewestFirst+` LIMIT ?`, args...).Scan(ctx, &rows)
	if err != nil {
		return nil, translate(err, "message")
	}
	out := make([]messaging.Message, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// MessagePages reads up to limit messages of each of the account's threads
// among threadIDs, newest first, in one statement that walks the
// messages_thread_recent index once per thread (the page ThreadMessages
// reads, for many threads): a LATERAL join on Postgres, a UNION ALL of
// per-thread LIMIT queries on SQLite (which has no LATERAL).
func (r MessagingStore) MessagePages(ctx context.Context, accountID string, threadIDs []string, before *appmessaging.MessageCursor, limit int) (map[string][]messaging.Message, error) {
	cond, condArgs := olderThan(before)
	var (
		query string
		args  []any
	)
	if r.dialect == Postgres {
		query = `SELECT m.* FROM unnest(?::text[]) AS t(id) CROSS JOIN LATERAL (
			SELECT ` + messageColumns + ` FROM messages
			WHERE thread_id = t.id AND account_id = ?` + cond + `
			ORDER BY ` + messagesNewestFirst + ` LIMIT ?) AS m`
		args = append(append([]any{pgdialect.Array(threadIDs), accountID}, condArgs...), limit)
	} else {
		parts := make([]string, len(threadIDs))
		for i, id := range threadIDs {
			parts[i] = `SELECT * FROM (SELECT ` + messageColumns + ` FROM messages
				WHERE thread_id = ? AND account_id = ?` + cond + `
				ORDER BY ` + messagesNewestFirst + ` LIMIT ?)`
			args = append(append(append(args, id, accountID), condArgs...), limit)
		}
		query = strings.Join(parts, " UNION ALL ")
	}
	var rows []messageRow
	if err := r.read.NewRaw(query, args...).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "message")
	}
	out := make(map[string][]messaging.Message, len(threadIDs))
	for _, row := range rows {
		out[row.ThreadID] = append(out[row.ThreadID], row.domain())
	}
	// Neither a LATERAL join nor UNION ALL promises to keep the order of
	// its parts.
	for _, msgs := range out {
		slices.SortFunc(msgs, func(a, b messaging.Message) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
	}
	return out, nil
}

// MessagesByID reads the account's messages among ids.
func (r MessagingStore) MessagesByID(ctx context.Context, accountID string, ids []string) ([]messaging.Message, error) {
	var rows []messageRow
	err := r.read.NewSelect().Model(&rows).Where("account_id = ?", accountID).Where("id IN (?)", bun.List(ids)).Scan(ctx)
	if err != nil {
		return nil, translate(err, "message")
	}
	out := make([]messaging.Message, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// MessageEvents reads, oldest first, up to limit message.sent and
// message.status events of the account's thread about the messages ids,
// recorded at or after since: one statement on the events_thread index,
// the payloads matched by their message_id (the use case checks each
// payload it gets).
func (r MessagingStore) MessageEvents(ctx context.Context, accountID, threadID string, ids []string, since time.Time, limit int) ([]event.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := r.read.NewSelect().Model((*loggedEventRow)(nil)).
		Where("thread_id = ?", threadID).Where("account_id = ?", accountID).
		Where("type IN (?)", bun.List([]string{string(event.MessageSent), string(event.MessageStatus)})).
		Where("created_at >= ?", since).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, id := range ids {
				q = q.WhereOr("payload LIKE ?", `%"message_id":"`+id+`"%`)
			}
			return q
		})
	var rows []loggedEventRow
	if err := q.Order("seq").Limit(limit).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "event")
	}
	out := make([]event.Event, len(rows))
	for i, row := range rows {
		out[i] = event.Event{
			ID: row.ID, AccountID: row.AccountID, Type: event.Type(row.Type), ThreadID: row.ThreadID.String,
			Payload: []byte(row.Payload), CreatedAt: row.CreatedAt.UTC(),
		}
	}
	return out, nil
}
