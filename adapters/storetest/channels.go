package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// ChannelsFixture is a channels store on an empty database, the account
// port that creates the agent numbers its rows belong to, and the pruning
// of handled provider updates.
type ChannelsFixture struct {
	Store    channels.Store
	Accounts accounts.Store
	// PruneUpdates forgets the handled updates recorded before before and
	// counts them.
	PruneUpdates func(ctx context.Context, before time.Time) (int64, error)
}

// channelsBundle is a channels fixture with an account, a Telegram bot
// and a sandbox number of it.
type channelsBundle struct {
	ChannelsFixture
	account string
	tg, sb  account.Number
}

func newChannelsBundle(t *testing.T, open func(t *testing.T) ChannelsFixture) channelsBundle {
	t.Helper()
	ctx := context.Background()
	f := open(t)
	acc := newAccount("channels")
	require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, acc))
	tg := account.Number{ID: ident.New(ident.Number), AccountID: acc.ID, Number: "+14155550103", Service: account.Telegram, Provider: account.ProviderTelegram,
		SealedSettings: []byte{1, 0, 7}, Enabled: true, CreatedAt: at}
	sb := account.Number{ID: ident.New(ident.Number), AccountID: acc.ID, Number: "+14155550100", Service: account.WhatsApp, Provider: account.ProviderSandbox,
		SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
	require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, tg))
	require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, sb))
	return channelsBundle{ChannelsFixture: f, account: acc.ID, tg: tg, sb: sb}
}

// link commits g as a new group with its provider chat chatID of the bot,
// through a decision.
func (b channelsBundle) link(ctx context.Context, g messaging.GroupState, chatID string) error {
	return b.Store.Decide(ctx, func(context.Context, channels.TxReads) (writes.Batch, error) {
		return writes.Batch{
			Groups:     []messaging.GroupState{g},
			GroupChats: []writes.GroupChat{{NumberID: b.tg.ID, ChatID: chatID, ThreadID: g.Thread.ID, At: at}},
		}, nil
	})
}

// group is a new Telegram group thread of the bundle's bot.
func (b channelsBundle) group(name string) messaging.GroupState {
	return messaging.GroupState{
		Thread: messaging.Thread{ID: ident.New(ident.Thread), AccountID: b.account, Service: account.Telegram, Type: messaging.Group,
			AgentNumber: b.tg.Number, Name: name, CreatedAt: at, UpdatedAt: at},
		Members: []messaging.Participant{{Address: b.tg.Number, IsAgent: true, Admin: true}},
	}
}

// Channels runs the contract of channels.Store against the fixture that
// open returns; open must give each call its own empty, migrated database.
func Channels(t *testing.T, open func(t *testing.T) ChannelsFixture) {
	ctx := context.Background()

	t.Run("NumbersByProviderAndID", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		other := newAccount("other")
		require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, other))
		tg2 := account.Number{ID: ident.New(ident.Number), AccountID: other.ID, Number: "+14155550104", Service: account.Telegram, Provider: account.ProviderTelegram,
			SealedSettings: []byte{2}, Enabled: true, CreatedAt: at.Add(time.Second)}
		require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, tg2))
		r := f.Store.Repos()

		list, err := r.NumbersByProvider(ctx, account.ProviderTelegram)
		require.NoError(t, err)
		require.ElementsMatch(t, []account.Number{f.tg, tg2}, list, "every account's numbers on the provider")
		list, err = r.NumbersByProvider(ctx, account.ProviderSandbox)
		require.NoError(t, err)
		require.Equal(t, []account.Number{f.sb}, list)
		list, err = r.NumbersByProvider(ctx, account.ProviderWhatsAppCloud)
		require.NoError(t, err)
		require.Empty(t, list)

		n, err := r.NumberByID(ctx, f.tg.ID)
		require.NoError(t, err)
		require.Equal(t, f.tg, n)
		_, err = r.NumberByID(ctx, "num_missing")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	})

	t.Run("ContactsKeepWhatALaterUpdateLeavesEmpty", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		r := f.Store.Repos()
		// What a chat showed is written as a batch's contact write.
		upsert := func(c writes.ChatContact) error {
			return f.Store.Decide(ctx, func(context.Context, channels.TxReads) (writes.Batch, error) {
				return writes.Batch{Contacts: []writes.ContactWrite{{Chat: &c}}}, nil
			})
		}
		require.NoError(t, upsert(writes.ChatContact{NumberID: f.tg.ID, ChatID: "777", Username: "alice", Name: "Alice", At: at}))
		require.NoError(t, upsert(writes.ChatContact{NumberID: f.tg.ID, ChatID: "777", Phone: "+491701234567", At: at.Add(time.Minute)}))
		want := channels.Contact{NumberID: f.tg.ID, ChatID: "777", Username: "alice", Phone: "+491701234567", Name: "Alice", UpdatedAt: at.Add(time.Minute)}
		c, err := r.ChannelContactByChat(ctx, f.tg.ID, "777")
		require.NoError(t, err)
		require.Equal(t, want, c)
		byName, err := r.ChannelContactByUsername(ctx, f.tg.ID, "alice")
		require.NoError(t, err)
		require.Equal(t, want, byName)
		byPhone, err := r.ChannelContactByPhone(ctx, f.tg.ID, "+491701234567")
		require.NoError(t, err)
		require.Equal(t, want, byPhone)

		_, err = r.ChannelContactByUsername(ctx, f.sb.ID, "alice")
		require.True(t, failure.Is(err, failure.KindNotFound), "contacts are per agent number: %v", err)
		_, err = r.ChannelContactByChat(ctx, f.tg.ID, "778")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		_, err = r.ChannelContactByPhone(ctx, f.tg.ID, "+491700000000")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

		// A username that moved to another chat names the newer one.
		require.NoError(t, upsert(writes.ChatContact{NumberID: f.tg.ID, ChatID: "888", Username: "alice", At: at.Add(time.Hour)}))
		byName, err = r.ChannelContactByUsername(ctx, f.tg.ID, "alice")
		require.NoError(t, err)
		require.Equal(t, "888", byName.ChatID)
		c, err = r.ChannelContactByChat(ctx, f.tg.ID, "777")
		require.NoError(t, err)
		require.Equal(t, want, c, "the older chat keeps what it showed")
	})

	t.Run("GroupChats", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		r := f.Store.Repos()
		g := f.group("Team")
		require.NoError(t, f.link(ctx, g, "-100123"))
		err := f.link(ctx, f.group("Other"), "-100123")
		require.True(t, failure.Is(err, failure.KindConflict), "%v", err)
		id, err := r.GroupChatThread(ctx, f.tg.ID, "-100123")
		require.NoError(t, err)
		require.Equal(t, g.Thread.ID, id)
		chat, err := r.ThreadGroupChat(ctx, f.tg.ID, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, "-100123", chat)
		_, err = r.ThreadGroupChat(ctx, f.sb.ID, g.Thread.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "chats are per agent number: %v", err)
		_, err = r.GroupChatThread(ctx, f.sb.ID, "-100123")
		require.True(t, failure.Is(err, failure.KindNotFound), "chats are per agent number: %v", err)

		got, err := r.Group(ctx, f.account, id)
		require.NoError(t, err)
		require.Equal(t, g, got)
		g.Members = append(g.Members, messaging.Participant{Address: "+491701234567", Name: "Alice"})
		g.Thread.Name, g.Thread.UpdatedAt = "Team 2", at.Add(time.Minute)
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx channels.TxReads) (writes.Batch, error) {
			id, err := tx.GroupChatThread(ctx, f.tg.ID, "-100123")
			require.NoError(t, err)
			cur, err := tx.Group(ctx, f.account, id)
			require.NoError(t, err)
			require.Equal(t, "Team", cur.Thread.Name)
			return writes.Batch{GroupStates: []messaging.GroupState{g}}, nil
		}))
		got, err = r.Group(ctx, f.account, id)
		require.NoError(t, err)
		require.Equal(t, g, got)

		// A group that became a supergroup keeps its thread.
		require.NoError(t, r.MoveGroupChat(ctx, f.tg.ID, "-100123", "-100999"))
		id, err = r.GroupChatThread(ctx, f.tg.ID, "-100999")
		require.NoError(t, err)
		require.Equal(t, g.Thread.ID, id)
		chat, err = r.ThreadGroupChat(ctx, f.tg.ID, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, "-100999", chat)
		_, err = r.GroupChatThread(ctx, f.tg.ID, "-100123")
		require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
		require.NoError(t, r.MoveGroupChat(ctx, f.tg.ID, "-100404", "-100405"), "an unknown chat is left alone")
		_, err = r.GroupChatThread(ctx, f.tg.ID, "-100405")
		require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)

		// Moving onto a chat id that has a thread of its own is a Conflict,
		// and both chats stay as they were.
		g2 := f.group("Team")
		require.NoError(t, f.link(ctx, g2, "-100777"))
		err = r.MoveGroupChat(ctx, f.tg.ID, "-100777", "-100999")
		require.True(t, failure.Is(err, failure.KindConflict), "%v", err)
		id, err = r.GroupChatThread(ctx, f.tg.ID, "-100777")
		require.NoError(t, err)
		require.Equal(t, g2.Thread.ID, id)
		id, err = r.GroupChatThread(ctx, f.tg.ID, "-100999")
		require.NoError(t, err)
		require.Equal(t, g.Thread.ID, id)
	})

	t.Run("UpdatesAreMarkedOnce", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		r := f.Store.Repos()
		seen, err := r.UpdateSeen(ctx, f.tg.ID, "tg-update:1")
		require.NoError(t, err)
		require.False(t, seen)
		fresh, err := r.MarkUpdate(ctx, f.tg.ID, "tg-update:1", at)
		require.NoError(t, err)
		require.True(t, fresh)
		fresh, err = r.MarkUpdate(ctx, f.tg.ID, "tg-update:1", at)
		require.NoError(t, err)
		require.False(t, fresh, "a second mark reports the update as known")
		seen, err = r.UpdateSeen(ctx, f.tg.ID, "tg-update:1")
		require.NoError(t, err)
		require.True(t, seen)
		seen, err = r.UpdateSeen(ctx, f.sb.ID, "tg-update:1")
		require.NoError(t, err)
		require.False(t, seen, "updates are per agent number")

		_, err = r.MarkUpdate(ctx, f.tg.ID, "tg-update:2", at.Add(48*time.Hour))
		require.NoError(t, err)
		pruned, err := f.PruneUpdates(ctx, at.Add(24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(1), pruned)
		seen, err = r.UpdateSeen(ctx, f.tg.ID, "tg-update:1")
		require.NoError(t, err)
		require.False(t, seen, "pruned")
		seen, err = r.UpdateSeen(ctx, f.tg.ID, "tg-update:2")
		require.NoError(t, err)
		require.True(t, seen, "newer than the cut")
	})

	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		g := f.group("Team")
		boom := errors.New("boom")
		err := f.Store.Decide(ctx, func(ctx context.Context, tx channels.TxReads) (writes.Batch, error) {
			_, err := tx.GroupChatThread(ctx, f.tg.ID, "-100123")
			require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
			return writes.Batch{Groups: []messaging.GroupState{g}}, boom
		})
		require.ErrorIs(t, err, boom)
		r := f.Store.Repos()
		_, err = r.Group(ctx, f.account, g.Thread.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "a failed decision writes nothing: %v", err)

		// A batch whose chat is linked already writes nothing of its own.
		require.NoError(t, f.link(ctx, f.group("Team"), "-100123"))
		err = f.link(ctx, g, "-100123")
		require.True(t, failure.Is(err, failure.KindConflict), "%v", err)
		_, err = r.Group(ctx, f.account, g.Thread.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "the group rolled back with its chat: %v", err)
	})

	t.Run("ConcurrentFirstMessagesOfAGroupChatMakeOneThread", func(t *testing.T) {
		t.Parallel()
		f := newChannelsBundle(t, open)
		const n = 6
		errs := make([]error, n)
		groups := make([]messaging.GroupState, n)
		marks := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			groups[i] = f.group("Team")
			wg.Go(func() {
				errs[i] = f.link(ctx, groups[i], "-100123")
				var err error
				marks[i], err = f.Store.Repos().MarkUpdate(ctx, f.tg.ID, "tg-update:1", at)
				if errs[i] == nil {
					errs[i] = err
				}
			})
		}
		wg.Wait()
		r := f.Store.Repos()
		id, err := r.GroupChatThread(ctx, f.tg.ID, "-100123")
		require.NoError(t, err)
		wins, fresh := 0, 0
		for i, err := range errs {
			if marks[i] {
				fresh++
			}
			_, gerr := r.Group(ctx, f.account, groups[i].Thread.ID)
			if groups[i].Thread.ID == id {
				require.NoError(t, err, "the winner")
				require.NoError(t, gerr)
				wins++
				continue
			}
			require.True(t, failure.Is(err, failure.KindConflict), "a loser: %v", err)
			require.True(t, failure.Is(gerr, failure.KindNotFound), "the loser's group rolled back: %v", gerr)
		}
		require.Equal(t, 1, wins)
		require.Equal(t, 1, fresh, "one mark of the update is the first")
	})
}
