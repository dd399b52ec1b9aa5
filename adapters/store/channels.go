package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// ChannelStore is the storage of the channel use cases (channels.Store): provider contacts, group chats and handled updates, beside the messaging reads they share.
type ChannelStore struct{ MessagingStore }

var _ channels.Store = ChannelStore{}

// ChannelStore is db's ChannelStore, outside any transaction.
func (db *DB) ChannelStore() ChannelStore { return ChannelStore{MessagingStore{db.base}} }

// Repos is s itself: its methods run each as its own statement outside a
// transaction, and inside the one Decide runs.
func (s ChannelStore) Repos() channels.Repos { return s }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there, with its reactions (channels.Store).
func (s ChannelStore) Decide(ctx context.Context, decide func(ctx context.Context, tx channels.TxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) {
		return decide(ctx, ChannelStore{MessagingStore{c}})
	})
}

// NumbersByProvider lists the agent numbers on a provider, every account's,
// oldest first.
func (r ChannelStore) NumbersByProvider(ctx context.Context, provider account.Provider) ([]account.Number, error) {
	var rows []numberRow
	if err := r.selectAll(ctx, &rows, "SELECT "+numberColumns+" FROM numbers WHERE provider = $1 ORDER BY created_at, id", string(provider)); err != nil {
		return nil, translate(err, "number")
	}
	out := make([]account.Number, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

type channelContactRow struct {
	bun.BaseModel `bun:"table:channel_contacts"`
	NumberID      string    `bun:"number_id,pk"`
	ChatID        string    `bun:"chat_id,pk"`
	Username      string    `bun:"username"`
	Phone         string    `bun:"phone"`
	Name          string    `bun:"name"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func (row channelContactRow) domain() channels.Contact {
	return channels.Contact{NumberID: row.NumberID, ChatID: row.ChatID, Username: row.Username, Phone: row.Phone, Name: row.Name, UpdatedAt: row.UpdatedAt.UTC()}
}

const channelContactColumns = "number_id, chat_id, username, phone, name, updated_at"

func (r ChannelStore) channelContact(ctx context.Context, where string, args ...any) (channels.Contact, error) {
	var row channelContactRow
	// The most recently seen chat wins when two chats showed one value.
	if err := r.selectOne(ctx, &row, "SELECT "+channelContactColumns+" FROM channel_contacts WHERE "+where+" ORDER BY updated_at DESC LIMIT 1", args...); err != nil {
		return channels.Contact{}, translate(err, "contact")
	}
	return row.domain(), nil
}

// ChannelContactByChat reads the contact of a chat.
func (r ChannelStore) ChannelContactByChat(ctx context.Context, numberID, chatID string) (channels.Contact, error) {
	return r.channelContact(ctx, "number_id = $1 AND chat_id = $2", numberID, chatID)
}

// ChannelContactByUsername finds a contact by lower-case username.
func (r ChannelStore) ChannelContactByUsername(ctx context.Context, numberID, username string) (channels.Contact, error) {
	return r.channelContact(ctx, "number_id = $1 AND username = $2", numberID, username)
}

// ChannelContactByPhone finds a contact by phone number.
func (r ChannelStore) ChannelContactByPhone(ctx context.Context, numberID, phone string) (channels.Contact, error) {
	return r.channelContact(ctx, "number_id = $1 AND phone = $2", numberID, phone)
}

type channelChatRow struct {
	bun.BaseModel `bun:"table:channel_chats"`
	NumberID      string    `bun:"number_id,pk"`
	ChatID        string    `bun:"chat_id,pk"`
	ThreadID      string    `bun:"thread_id"`
	CreatedAt     time.Time `bun:"created_at"`
}

// GroupChatThread finds the group thread of a provider group chat.
func (r ChannelStore) GroupChatThread(ctx context.Context, numberID, chatID string) (string, error) {
	var row channelChatRow
	if err := r.selectOne(ctx, &row, "SELECT number_id, chat_id, thread_id, created_at FROM channel_chats WHERE number_id = $1 AND chat_id = $2", numberID, chatID); err != nil {
		return "", translate(err, "group chat")
	}
	return row.ThreadID, nil
}

// ThreadGroupChat finds the provider group chat of a group thread.
func (r ChannelStore) ThreadGroupChat(ctx context.Context, numberID, threadID string) (string, error) {
	var row channelChatRow
	if err := r.selectOne(ctx, &row, "SELECT number_id, chat_id, thread_id, created_at FROM channel_chats WHERE number_id = $1 AND thread_id = $2", numberID, threadID); err != nil {
		return "", translate(err, "group chat")
	}
	return row.ChatID, nil
}

// MoveGroupChat gives a group chat its new chat id.
func (r ChannelStore) MoveGroupChat(ctx context.Context, numberID, from, to string) error {
	_, err := r.write.NewRaw("UPDATE channel_chats SET chat_id = ? WHERE number_id = ? AND chat_id = ?", to, numberID, from).Exec(ctx)
	return translate(err, "group chat")
}

// MarkUpdate records a provider update as handled; false when it was
// recorded before.
func (r ChannelStore) MarkUpdate(ctx context.Context, numberID, key string, at time.Time) (bool, error) {
	res, err := r.write.NewRaw("INSERT INTO channel_updates (number_id, update_key, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", numberID, key, at).Exec(ctx)
	if err != nil {
		return false, translate(err, "update")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// UpdateSeen reports whether a provider update was handled.
func (r ChannelStore) UpdateSeen(ctx context.Context, numberID, key string) (bool, error) {
	var rows []struct {
		One int `bun:"one"`
	}
	if err := r.selectAll(ctx, &rows, "SELECT 1 AS one FROM channel_updates WHERE number_id = $1 AND update_key = $2", numberID, key); err != nil {
		return false, err
	}
	return len(rows) > 0, nil
}

// PruneUpdates forgets handled updates older than before: providers
// stop redelivering long before (Telegram after 24 hours).
func (r ChannelStore) PruneUpdates(ctx context.Context, before time.Time) (int64, error) {
	res, err := r.write.NewRaw("DELETE FROM channel_updates WHERE created_at < ?", before).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
