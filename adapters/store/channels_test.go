package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// TestChannelsContract checks the storage of the channel use cases on
// both dialects.
func TestChannelsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := dbtest.Open(t, dialect)
			r := db.ChannelStore()
			at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			acc := account.Account{ID: ident.New(ident.Account), Name: "A", CreatedAt: at, UpdatedAt: at}
			require.NoError(t, db.AccountStore().InsertAccount(ctx, acc))
			tg := account.Number{ID: ident.New(ident.Number), AccountID: acc.ID, Number: "+14155550103", Service: account.Telegram, Provider: account.ProviderTelegram, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
			sb := account.Number{ID: ident.New(ident.Number), AccountID: acc.ID, Number: "+14155550100", Service: account.WhatsApp, Provider: account.ProviderSandbox, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
			require.NoError(t, db.AccountStore().InsertNumber(ctx, tg))
			require.NoError(t, db.AccountStore().InsertNumber(ctx, sb))
			var _ channels.Store = db.ChannelStore()

			list, err := r.NumbersByProvider(ctx, account.ProviderTelegram)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, tg.ID, list[0].ID)

			// Contacts: what a later update leaves empty is kept.
			require.NoError(t, r.UpsertChannelContact(ctx, channels.Contact{NumberID: tg.ID, ChatID: "777", Username: "alice", Name: "Alice", UpdatedAt: at}))
			require.NoError(t, r.UpsertChannelContact(ctx, channels.Contact{NumberID: tg.ID, ChatID: "777", Phone: "+491701234567", UpdatedAt: at.Add(time.Minute)}))
			c, err := r.ChannelContactByChat(ctx, tg.ID, "777")
			require.NoError(t, err)
			require.Equal(t, channels.Contact{NumberID: tg.ID, ChatID: "777", Username: "alice", Phone: "+491701234567", Name: "Alice", UpdatedAt: at.Add(time.Minute)}, c)
			byName, err := r.ChannelContactByUsername(ctx, tg.ID, "alice")
			require.NoError(t, err)
			require.Equal(t, "777", byName.ChatID)
			byPhone, err := r.ChannelContactByPhone(ctx, tg.ID, "+491701234567")
			require.NoError(t, err)
			require.Equal(t, "777", byPhone.ChatID)
			_, err = r.ChannelContactByUsername(ctx, sb.ID, "alice")
			require.True(t, failure.Is(err, failure.KindNotFound), "contacts are per agent number")
			// A username that moved to another chat names the newer one.
			require.NoError(t, r.UpsertChannelContact(ctx, channels.Contact{NumberID: tg.ID, ChatID: "888", Username: "alice", UpdatedAt: at.Add(time.Hour)}))
			byName, err = r.ChannelContactByUsername(ctx, tg.ID, "alice")
			require.NoError(t, err)
			require.Equal(t, "888", byName.ChatID)

			// Group chats.
			g := messaging.GroupState{Thread: messaging.Thread{ID: ident.New(ident.Thread), AccountID: acc.ID, Service: account.Telegram, Type: messaging.Group,
				AgentNumber: tg.Number, Name: "Team", CreatedAt: at, UpdatedAt: at}, Members: []messaging.Participant{{Address: tg.Number, IsAgent: true, Admin: true}}}
			require.NoError(t, r.InsertGroup(ctx, g))
			require.NoError(t, r.InsertGroupChat(ctx, tg.ID, "-100123", g.Thread.ID, at))
			err = r.InsertGroupChat(ctx, tg.ID, "-100123", g.Thread.ID, at)
			require.True(t, failure.Is(err, failure.KindConflict), "%v", err)
			id, err := r.GroupChatThread(ctx, tg.ID, "-100123")
			require.NoError(t, err)
			require.Equal(t, g.Thread.ID, id)
			chat, err := r.ThreadGroupChat(ctx, tg.ID, g.Thread.ID)
			require.NoError(t, err)
			require.Equal(t, "-100123", chat)
			_, err = r.ThreadGroupChat(ctx, sb.ID, g.Thread.ID)
			require.True(t, failure.Is(err, failure.KindNotFound))
			// A group that became a supergroup keeps its thread.
			require.NoError(t, r.MoveGroupChat(ctx, tg.ID, "-100123", "-100999"))
			id, err = r.GroupChatThread(ctx, tg.ID, "-100999")
			require.NoError(t, err)
			require.Equal(t, g.Thread.ID, id)
			_, err = r.GroupChatThread(ctx, tg.ID, "-100123")
			require.True(t, failure.Is(err, failure.KindNotFound))
			g2 := g
			g2.Thread.ID = ident.New(ident.Thread)
			require.NoError(t, r.InsertGroup(ctx, g2))
			require.NoError(t, r.InsertGroupChat(ctx, tg.ID, "-100777", g2.Thread.ID, at))
			err = r.MoveGroupChat(ctx, tg.ID, "-100777", "-100999")
			require.True(t, failure.Is(err, failure.KindConflict), "%v", err)

			// Updates.
			seen, err := r.UpdateSeen(ctx, tg.ID, "tg-update:1")
			require.NoError(t, err)
			require.False(t, seen)
			fresh, err := r.MarkUpdate(ctx, tg.ID, "tg-update:1", at)
			require.NoError(t, err)
			require.True(t, fresh)
			fresh, err = r.MarkUpdate(ctx, tg.ID, "tg-update:1", at)
			require.NoError(t, err)
			require.False(t, fresh, "a second mark reports the update as known")
			seen, err = r.UpdateSeen(ctx, tg.ID, "tg-update:1")
			require.NoError(t, err)
			require.True(t, seen)
			_, err = r.MarkUpdate(ctx, tg.ID, "tg-update:2", at.Add(48*time.Hour))
			require.NoError(t, err)
			pruned, err := r.PruneUpdates(ctx, at.Add(24*time.Hour))
			require.NoError(t, err)
			require.Equal(t, int64(1), pruned)
			seen, err = r.UpdateSeen(ctx, tg.ID, "tg-update:2")
			require.NoError(t, err)
			require.True(t, seen)
		})
	}
}
