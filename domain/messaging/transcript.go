package messaging

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// AgentLabel names the agent in a transcript line of a message it sent
// through the API: outbound messages carry no sender name, and the agent
// number alone would read like one of the users.
const AgentLabel = "agent"

// Transcript renders messages as plain text for people and language
// models: one line per message, oldest first whatever the order given
// (creation time, then id, the order of the thread's pages), each ended by
// a newline. It is empty when there are no messages.
func Transcript(msgs []Message) string {
	ordered := slices.Clone(msgs)
	slices.SortFunc(ordered, func(a, b Message) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var b strings.Builder
	for _, m := range ordered {
		b.WriteString(TranscriptLine(m))
		b.WriteByte('\n')
	}
	return b.String()
}

// TranscriptLine renders one message without a line break:
//
//	[2026-11-25T10:00:00Z] Ann (+14155550123): text
//
// The time is RFC 3339 in UTC, to the second. The sender is the name and
// address of the user who wrote, or AgentLabel and the agent number for
// what the agent sent. Media and places are described in brackets; a
// message the user edited ends in [edited], one they deleted is [deleted].
//
// A line is always one message, and its text cannot pass for another
// line or another sender: line breaks inside the message are written as
// \n, every other control or separator character as \u followed by its
// four hex digits, and a backslash as two. A user's name is written as
// is only when it is plain (letters, digits, marks, spaces and .-'_&,)
// and is not AgentLabel; any other name is written in double quotes, Go
// escapes and all, so that "agent (+14155550100)" cannot read as the
// agent.
func TranscriptLine(m Message) string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(m.CreatedAt.UTC().Format(time.RFC3339))
	b.WriteString("] ")
	b.WriteString(senderLabel(m))
	b.WriteString(": ")
	switch {
	case m.Deleted():
		b.WriteString("[deleted]")
	case m.EditedAt != nil:
		b.WriteString(describe(m.Content))
		b.WriteString(" [edited]")
	default:
		b.WriteString(describe(m.Content))
	}
	return b.String()
}

// senderLabel is "Name (+address)", or the address alone when the user
// gave no name.
func senderLabel(m Message) string {
	from := oneLine(m.From)
	if m.Direction == OutboundAPI {
		return AgentLabel + " (" + from + ")"
	}
	name := strings.TrimSpace(m.SenderName)
	switch {
	case name == "":
		return from
	case plainName(name):
		return name + " (" + from + ")"
	}
	return strconv.Quote(name) + " (" + from + ")"
}

// plainName reports whether a user's name can be written without quotes:
// nothing in it could read as transcript structure or as the agent.
func plainName(name string) bool {
	if strings.EqualFold(name, AgentLabel) {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) && r != ' ' && !strings.ContainsRune(".-'_&,", r) {
			return false
		}
	}
	return true
}

// describe renders a message's content: its text, or a bracketed
// description of a file or a place.
func describe(c Content) string {
	switch {
	case c.Kind == KindText:
		return oneLine(c.Text)
	case c.Kind == KindTemplate && c.Template != nil:
		return "[template " + oneLine(c.Template.Name) + "] " + oneLine(c.Text)
	case c.Kind.IsMedia():
		out := "[" + string(c.Kind) + ": " + oneLine(c.MediaURL)
		if c.Caption != "" {
			out += " caption " + strconv.Quote(c.Caption)
		}
		return out + "]"
	case c.Kind == KindLocation:
		out := "[location: " + coordinate(c.Latitude) + ", " + coordinate(c.Longitude)
		if c.PlaceName != "" {
			out += " " + strconv.Quote(c.PlaceName)
		}
		if c.Address != "" {
			out += " address " + strconv.Quote(c.Address)
		}
		return out + "]"
	}
	return "[" + oneLine(string(c.Kind)) + "]"
}

// coordinate writes a degree value in the fewest digits that read back
// as the same number (52.37, not 52.370000).
func coordinate(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// lineBreaks are the sequences written as \n; "\r\n" is one break.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\v", "\n", "\f", "\n",
	"\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// oneLine escapes s for one transcript line: a backslash as two, each
// line break as \n, and every other control character (C0, DEL, C1, the
// information separators U+001C to U+001F among them) as \uXXXX.
func oneLine(s string) string {
	s = lineBreaks.Replace(s)
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
