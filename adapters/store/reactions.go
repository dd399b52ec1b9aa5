package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// messageReactionRow is the current reaction of one reactor on a message;
// an empty emoji is a reaction taken back.
type messageReactionRow struct {
	bun.BaseModel `bun:"table:message_reactions"`
	MessageID     string    `bun:"message_id,pk"`
	Reactor       string    `bun:"reactor,pk"`
	AccountID     string    `bun:"account_id"`
	ThreadID      string    `bun:"thread_id"`
	ReactorName   string    `bun:"reactor_name"`
	FromAgent     bool      `bun:"from_agent"`
	Emoji         string    `bun:"emoji"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func reactionToRow(r messaging.Reaction) messageReactionRow {
	return messageReactionRow{MessageID: r.MessageID, Reactor: r.Reactor, AccountID: r.AccountID, ThreadID: r.ThreadID,
		ReactorName: r.ReactorName, FromAgent: r.FromAgent, Emoji: r.Emoji, UpdatedAt: r.At}
}

// reactionRows are the rows of reactions, the last of each message and
// reactor (one multi-row upsert may change a row once).
func reactionRows(reactions []messaging.Reaction) []messageReactionRow {
	kept := latestByID(reactions, func(r messaging.Reaction) string { return r.MessageID + "\x00" + r.Reactor })
	return mapRows(kept, reactionToRow)
}

// reactionConflict is what setting a reaction again changes: the emoji,
// name and time, unless the stored reaction is newer. reactionUpsert is
// the clause as it follows an INSERT.
const (
	reactionConflict = "CONFLICT (message_id, reactor) DO UPDATE SET emoji = EXCLUDED.emoji, " +
		"reactor_name = EXCLUDED.reactor_name, from_agent = EXCLUDED.from_agent, updated_at = EXCLUDED.updated_at " +
		"WHERE message_reactions.updated_at <= EXCLUDED.updated_at"
	reactionUpsert = " ON " + reactionConflict
)

// setReactions upserts reactions (SQLite's statement set).
func setReactions(db bun.IDB, reactions []messaging.Reaction) []batchQuery {
	if len(reactions) == 0 {
		return nil
	}
	rows := reactionRows(reactions)
	return []batchQuery{db.NewInsert().Model(&rows).ModelTableExpr("message_reactions").On(reactionConflict).Returning("NULL")}
}

// Reactions returns the current reactions (taken-back ones left out) on
// the account's messages ids, by message id, oldest first.
func (r MessagingStore) Reactions(ctx context.Context, accountID string, messageIDs []string) (map[string][]messaging.Reaction, error) {
	out := map[string][]messaging.Reaction{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	var rows []messageReactionRow
	err := r.read.NewRaw(`SELECT message_id, reactor, account_id, thread_id, reactor_name, from_agent, emoji, updated_at
		FROM message_reactions WHERE message_id IN (?) AND account_id = ? AND emoji <> '' ORDER BY updated_at, reactor`,
		bun.List(messageIDs), accountID).Scan(ctx, &rows)
	if err != nil {
		return nil, translate(err, "reaction")
	}
	for _, row := range rows {
		out[row.MessageID] = append(out[row.MessageID], messaging.Reaction{
			MessageID: row.MessageID, AccountID: row.AccountID, ThreadID: row.ThreadID, Reactor: row.Reactor,
			ReactorName: row.ReactorName, FromAgent: row.FromAgent, Emoji: row.Emoji, At: row.UpdatedAt.UTC(),
		})
	}
	return out, nil
}
