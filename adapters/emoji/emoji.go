// Package emoji tells whether a string is exactly one emoji, with
// github.com/rivo/uniseg's Unicode grapheme clusters and widths.
package emoji

import (
	"strings"
	"unicode"

	"github.com/rivo/uniseg"
)

// Check is the messaging use cases' EmojiCheck.
type Check struct{}

// keycap is the combining mark of keycap emoji (1️⃣, #️⃣).
const keycap = '\u20e3'

// IsEmoji reports whether s is one grapheme cluster shown as an emoji:
// uniseg gives it the width of two cells (emoji presentation, or a text
// symbol followed by the emoji variation selector U+FE0F, flags, ZWJ
// sequences and skin tones included) and it starts with no letter or
// digit (wide CJK letters are two cells too), or it is a keycap
// sequence.
func (Check) IsEmoji(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	cluster, rest, width, _ := uniseg.FirstGraphemeClusterInString(s, -1)
	if rest != "" {
		return false
	}
	if strings.ContainsRune(cluster, keycap) {
		return true
	}
	first := []rune(cluster)[0]
	if unicode.IsLetter(first) || unicode.IsDigit(first) || unicode.IsSpace(first) || unicode.IsPunct(first) {
		return false
	}
	return width == 2
}

// Graphemes counts the user-perceived characters of s (its grapheme
// clusters): the messaging use cases' Graphemes, for button titles.
func (Check) Graphemes(s string) int { return uniseg.GraphemeClusterCount(s) }
