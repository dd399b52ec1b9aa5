package memory

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

var (
	_ channels.Repos = (*Repos)(nil)
)

// chatRow links a provider group chat to its group thread.
type chatRow struct {
	threadID  string
	createdAt time.Time
}

// needNumber is the foreign key to numbers.
func (t *tables) needNumber(id string) error {
	if _, ok := t.numbers[id]; !ok {
		return foreignKey("number", id)
	}
	return nil
}

// NumbersByProvider lists the agent numbers on a provider, every
// account's, oldest first.
func (r *Repos) NumbersByProvider(ctx context.Context, provider account.Provider) ([]account.Number, error) {
	var out []account.Number
	err := r.read(ctx, func(t *tables) error {
		out = t.numbersWhere(func(n account.Number) bool { return n.Provider == provider })
		return nil
	})
	return out, err
}

// UpsertChannelContact stores what a provider showed about a user; empty
// values keep what was known.
func (r *Repos) UpsertChannelContact(ctx context.Context, c channels.Contact) error {
	return r.write(ctx, func(t *tables) error {
		if err := t.needNumber(c.NumberID); err != nil {
			return err
		}
		key := pair{c.NumberID, c.ChatID}
		cur := t.channelContacts[key]
		c.Username, c.Phone, c.Name = cmp.Or(c.Username, cur.Username), cmp.Or(c.Phone, cur.Phone), cmp.Or(c.Name, cur.Name)
		c.UpdatedAt = utc(c.UpdatedAt)
		t.channelContacts[key] = c
		return nil
	})
}

// channelContact reads the most recently seen contact of the number that
// match says.
func (r *Repos) channelContact(ctx context.Context, numberID string, match func(channels.Contact) bool) (channels.Contact, error) {
	var out channels.Contact
	err := r.read(ctx, func(t *tables) error {
		found := sorted(t.channelContacts, func(c channels.Contact) bool { return c.NumberID == numberID && match(c) },
			func(a, b channels.Contact) int {
				return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.ChatID, b.ChatID))
			})
		if len(found) == 0 {
			return failure.NotFound("contact")
		}
		out = found[0]
		return nil
	})
	return out, err
}

// ChannelContactByChat reads the contact of a chat.
func (r *Repos) ChannelContactByChat(ctx context.Context, numberID, chatID string) (channels.Contact, error) {
	return r.channelContact(ctx, numberID, func(c channels.Contact) bool { return c.ChatID == chatID })
}

// ChannelContactByUsername finds a contact by lower-case username.
func (r *Repos) ChannelContactByUsername(ctx context.Context, numberID, username string) (channels.Contact, error) {
	return r.channelContact(ctx, numberID, func(c channels.Contact) bool { return c.Username == username })
}

// ChannelContactByPhone finds a contact by phone number.
func (r *Repos) ChannelContactByPhone(ctx context.Context, numberID, phone string) (channels.Contact, error) {
	return r.channelContact(ctx, numberID, func(c channels.Contact) bool { return c.Phone == phone })
}

// GroupChatThread finds the group thread of a provider group chat.
func (r *Repos) GroupChatThread(ctx context.Context, numberID, chatID string) (string, error) {
	var out string
	err := r.read(ctx, func(t *tables) error {
		c, ok := t.chats[pair{numberID, chatID}]
		if !ok {
			return failure.NotFound("group chat")
		}
		out = c.threadID
		return nil
	})
	return out, err
}

// ThreadGroupChat finds the provider group chat of a group thread.
func (r *Repos) ThreadGroupChat(ctx context.Context, numberID, threadID string) (string, error) {
	var out string
	err := r.read(ctx, func(t *tables) error {
		for key, c := range t.chats {
			if key.a == numberID && c.threadID == threadID {
				out = key.b
				return nil
			}
		}
		return failure.NotFound("group chat")
	})
	return out, err
}

// MoveGroupChat gives a group chat its new chat id; unknown chats are left
// alone.
func (r *Repos) MoveGroupChat(ctx context.Context, numberID, from, to string) error {
	return r.write(ctx, func(t *tables) error {
		c, ok := t.chats[pair{numberID, from}]
		if !ok || from == to {
			return nil
		}
		if _, clash := t.chats[pair{numberID, to}]; clash {
			return taken("group chat")
		}
		delete(t.chats, pair{numberID, from})
		t.chats[pair{numberID, to}] = c
		return nil
	})
}

// insertGroupChat links a provider group chat to its group thread
// (writes.Batch.GroupChats); a chat and a thread are linked once.
func (t *tables) insertGroupChat(c writes.GroupChat) error {
	if _, ok := t.chats[pair{c.NumberID, c.ChatID}]; ok {
		return taken("group chat")
	}
	for _, row := range t.chats {
		if row.threadID == c.ThreadID {
			return taken("group chat")
		}
	}
	if err := t.needNumber(c.NumberID); err != nil {
		return err
	}
	if _, ok := t.threads[c.ThreadID]; !ok {
		return foreignKey("thread", c.ThreadID)
	}
	t.chats[pair{c.NumberID, c.ChatID}] = chatRow{threadID: c.ThreadID, createdAt: utc(c.At)}
	return nil
}

// MarkUpdate records a provider update as handled; false when it was
// recorded before.
func (r *Repos) MarkUpdate(ctx context.Context, numberID, key string, at time.Time) (bool, error) {
	var added bool
	err := r.write(ctx, func(t *tables) error {
		if _, seen := t.updates[pair{numberID, key}]; seen {
			return nil
		}
		if err := t.needNumber(numberID); err != nil {
			return err
		}
		t.updates[pair{numberID, key}], added = utc(at), true
		return nil
	})
	return added, err
}

// UpdateSeen reports whether a provider update was handled.
func (r *Repos) UpdateSeen(ctx context.Context, numberID, key string) (bool, error) {
	var seen bool
	err := r.read(ctx, func(t *tables) error { _, seen = t.updates[pair{numberID, key}]; return nil })
	return seen, err
}

// PruneUpdates forgets handled updates recorded before before, and counts
// them.
func (r *Repos) PruneUpdates(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := r.write(ctx, func(t *tables) error {
		for key, at := range t.updates {
			if at.Before(before) {
				delete(t.updates, key)
				n++
			}
		}
		return nil
	})
	return n, err
}

// ChannelStore is the channel use cases' store (channels.Store), as store.DB.ChannelStore is.
func (db *DB) ChannelStore() channels.Store {
	return decidingStore[channels.Repos, channels.TxReads]{
		bound: bound[channels.Repos]{db: db, view: func(r *Repos) channels.Repos { return r }},
		reads: func(r *Repos) channels.TxReads { return r },
	}
}
