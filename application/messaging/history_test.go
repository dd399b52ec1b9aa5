package messaging_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// receiveMany has a user write n messages and returns them in the order
// written, with their thread's id.
func (b *testBundle) receiveMany(t *testing.T, user string, n int) ([]domain.Message, string) {
	t.Helper()
	out := make([]domain.Message, n)
	for i := range out {
		m, err := b.svc.Receive(context.Background(), messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: user,
			To: b.number.Number, SenderName: "Ann", Content: domain.Content{Kind: domain.KindText, Text: fmt.Sprint("m", i)}})
		require.NoError(t, err)
		out[i] = m
	}
	return out, out[0].ThreadID
}

// requireBadCursor checks a validation error on the query parameter field.
func requireBadCursor(t *testing.T, err error, field, says string) {
	t.Helper()
	require.True(t, failure.Is(err, failure.KindInvalid), "want Invalid, got %v", err)
	fields := failure.As(err).Fields
	require.Len(t, fields, 1)
	require.Equal(t, "query", fields[0].In)
	require.Equal(t, []any{field}, fields[0].Path)
	require.Contains(t, fields[0].Message, says)
}

func TestMessageCursorTokens(t *testing.T) {
	t.Parallel()
	thread, other := ident.New(ident.Thread), ident.New(ident.Thread)
	c := messaging.MessageCursor{CreatedAt: time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC), ID: ident.New(ident.Message)}
	token := c.Token(thread)

	got, err := messaging.ParseMessageCursor(thread, token, "before")
	require.NoError(t, err)
	require.Equal(t, c.ID, got.ID)
	require.True(t, c.CreatedAt.Equal(got.CreatedAt), "to the nanosecond")
	require.NotContains(t, token, c.ID, "opaque")

	_, err = messaging.ParseMessageCursor(other, token, "before")
	requireBadCursor(t, err, "before", "another thread")

	raw, err := base64.RawURLEncoding.DecodeString(token)
	require.NoError(t, err)
	edited := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "10:00:00", "09:00:00", 1)))
	for name, bad := range map[string]string{
		"garbage":            "not a cursor",
		"not base64":         "%%%",
		"edited":             edited,
		"a character off":    token[:20] + flip(token[20]) + token[21:],
		"cut short":          token[:len(token)-4],
		"empty after decode": base64.RawURLEncoding.EncodeToString([]byte("|")),
		"very long":          strings.Repeat("A", 4096),
	} {
		_, err := messaging.ParseMessageCursor(thread, bad, "after")
		require.Error(t, err, name)
		requireBadCursor(t, err, "after", "malformed or was altered")
	}
}

// flip changes one base64url character into another.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("pages newest first, each message once", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		msgs, thread := b.receiveMany(t, "+14155550111", 25)
		var walked []string
		q := messaging.HistoryQuery{AccountID: b.account.ID, ThreadID: thread, Limit: 10}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3)
			page, err := b.svc.History(ctx, q)
			require.NoError(t, err)
			require.Equal(t, thread, page.ThreadID)
			for _, m := range page.Messages {
				walked = append(walked, m.ID)
			}
			if q.Before = page.NextCursor(); q.Before == "" {
				require.False(t, page.HasMore)
				require.Len(t, page.Messages, 5, "the last page holds the rest")
				break
			}
			require.Len(t, page.Messages, 10)
		}
		want := make([]string, len(msgs))
		for i, m := range msgs {
			want[len(msgs)-1-i] = m.ID
		}
		require.Equal(t, want, walked)
	})

	t.Run("limit defaults to 20 and is clamped to 100", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, thread := b.receiveMany(t, "+14155550111", 21)
		page, err := b.svc.History(ctx, messaging.HistoryQuery{AccountID: b.account.ID, ThreadID: thread})
		require.NoError(t, err)
		require.Len(t, page.Messages, messaging.DefaultPageSize)
		require.True(t, page.HasMore)
		page, err = b.svc.History(ctx, messaging.HistoryQuery{AccountID: b.account.ID, ThreadID: thread, Limit: 1000})
		require.NoError(t, err)
		require.Len(t, page.Messages, 21)
		require.False(t, page.HasMore)
		require.Empty(t, page.NextCursor())
	})

	t.Run("missing and other accounts' threads are not found", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		msgs, thread := b.receiveMany(t, "+14155550111", 2)
		other, _, err := b.accounts.CreateAccount(ctx, "Other")
		require.NoError(t, err)
		for name, q := range map[string]messaging.HistoryQuery{
			"another account's":                  {AccountID: other.ID, ThreadID: thread},
			"missing":                            {AccountID: b.account.ID, ThreadID: ident.New(ident.Thread)},
			"malformed":                          {AccountID: b.account.ID, ThreadID: "not-a-thread"},
			"another account's, at a cursor":     {AccountID: other.ID, ThreadID: thread, Before: messaging.MessageCursorOf(msgs[1]).Token(thread)},
			"another account's, at a bad cursor": {AccountID: other.ID, ThreadID: thread, Before: "nonsense"},
			"missing, at another's cursor": {AccountID: b.account.ID, ThreadID: ident.New(ident.Thread),
				Before: messaging.MessageCursorOf(msgs[1]).Token(thread)},
		} {
			_, err := b.svc.History(ctx, q)
			require.True(t, failure.Is(err, failure.KindNotFound), "%s: %v", name, err)
		}
	})

	t.Run("a cursor of another thread is refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, thread := b.receiveMany(t, "+14155550111", 2)
		_, second := b.receiveMany(t, "+14155550112", 2)
		_, err := b.svc.History(ctx, messaging.HistoryQuery{AccountID: b.account.ID, ThreadID: second,
			Before: messaging.MessageCursorOf(first[1]).Token(thread)})
		requireBadCursor(t, err, "before", "another thread")
	})
}
