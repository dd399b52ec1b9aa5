package messaging_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Each broken button rule is refused naming its field, with the limits of
// the thread's service.
func TestCheckButtons(t *testing.T) {
	t.Parallel()
	text := func(b ...messaging.Button) messaging.Content {
		return messaging.Content{Kind: messaging.KindText, Text: "Pick one", Buttons: b}
	}
	loc := func(err error) [][]any {
		var out [][]any
		for _, f := range failure.As(err).Fields {
			out = append(out, f.Path)
		}
		return out
	}
	count := utf8.RuneCountInString
	three := text(messaging.Button{ID: "a", Title: "A"}, messaging.Button{ID: "b", Title: "B"}, messaging.Button{ID: "c", Title: strings.Repeat("c", 20)})
	require.NoError(t, messaging.CheckButtons(account.WhatsApp, three, count))
	four := three
	four.Buttons = append(append([]messaging.Button{}, three.Buttons...), messaging.Button{ID: "d", Title: "D"})
	require.Equal(t, [][]any{{"buttons", 3}}, loc(messaging.CheckButtons(account.WhatsApp, four, count)))
	require.NoError(t, messaging.CheckButtons(account.Telegram, four, count), "Telegram takes up to 10")

	for name, tc := range map[string]struct {
		service account.Service
		button  messaging.Button
		loc     []any
	}{
		"long title":     {account.WhatsApp, messaging.Button{ID: "x", Title: strings.Repeat("t", 40)}, []any{"buttons", 1, "title"}},
		"empty title":    {account.Telegram, messaging.Button{ID: "x", Title: " "}, []any{"buttons", 1, "title"}},
		"empty id":       {account.WhatsApp, messaging.Button{Title: "X"}, []any{"buttons", 1, "id"}},
		"duplicate id":   {account.Telegram, messaging.Button{ID: "a", Title: "X"}, []any{"buttons", 1, "id"}},
		"65-byte id":     {account.Telegram, messaging.Button{ID: strings.Repeat("é", 32) + "x", Title: "X"}, []any{"buttons", 1, "id"}},
		"257-byte id":    {account.WhatsApp, messaging.Button{ID: strings.Repeat("x", 257), Title: "X"}, []any{"buttons", 1, "id"}},
		"id with spaces": {account.WhatsApp, messaging.Button{ID: " x", Title: "X"}, []any{"buttons", 1, "id"}},
	} {
		err := messaging.CheckButtons(tc.service, text(messaging.Button{ID: "a", Title: "A"}, tc.button), count)
		require.True(t, failure.Is(err, failure.KindInvalid), name)
		require.Equal(t, [][]any{tc.loc}, loc(err), name)
	}
	require.NoError(t, messaging.CheckButtons(account.Telegram, text(messaging.Button{ID: strings.Repeat("x", 64), Title: "X"}), count))
	// A title counts as its reader sees it.
	flags := text(messaging.Button{ID: "f", Title: strings.Repeat("🇩🇪", 20)})
	require.Error(t, messaging.CheckButtons(account.WhatsApp, flags, count), "40 code points")
	require.NoError(t, messaging.CheckButtons(account.WhatsApp, flags, func(s string) int { return utf8.RuneCountInString(s) / 2 }))

	// Buttons go with a text only; a press names its button.
	media := messaging.Content{Kind: messaging.KindImage, MediaURL: "https://m.example.com/a.png", Buttons: []messaging.Button{{ID: "a", Title: "A"}}}
	require.Equal(t, [][]any{{"buttons"}}, loc(media.Check(messaging.DefaultFields)))
	require.Equal(t, [][]any{{"button_id"}}, loc(messaging.Content{Kind: messaging.KindButtonReply}.Check(messaging.Fields{})))
	require.NoError(t, messaging.Content{Kind: messaging.KindButtonReply, ButtonID: "a"}.Check(messaging.Fields{}))
}
