package emoji_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/emoji"
)

func TestIsEmoji(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"👍", "❤️", "🔥", "👍🏽", "👨‍👩‍👧", "🇩🇪", "1️⃣", "🏳️‍🌈", "😂"} {
		require.True(t, emoji.Check{}.IsEmoji(s), "%q is one emoji", s)
	}
	for _, s := range []string{"", "a", "ok", "👍👍", "👍 ", " ", "中", "ｱ", "❤", "1", "#", "-", "👍a", "\u200d", "\ufe0f"} {
		require.False(t, emoji.Check{}.IsEmoji(s), "%q is not one emoji", s)
	}
}

func TestGraphemes(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "Yes": 3, "👨‍👩‍👧": 1, "🇩🇪 Berlin": 8, "é": 1, "👍🏽👍🏽": 2} {
		require.Equal(t, want, emoji.Check{}.Graphemes(s), "%q", s)
	}
}
