package messaging

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
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
// what the agent sent. Media and places are described in brackets. Line
// breaks inside the message are written as \n, so that a line is always
// one message.
func TranscriptLine(m Message) string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(m.CreatedAt.UTC().Format(time.RFC3339))
	b.WriteString("] ")
	b.WriteString(oneLine(senderLabel(m)))
	b.WriteString(": ")
	b.WriteString(describe(m.Content))
	return b.String()
}

// senderLabel is "Name (+address)", or the address alone when the user
// gave no name.
func senderLabel(m Message) string {
	name := strings.TrimSpace(m.SenderName)
	if m.Direction == OutboundAPI {
		name = AgentLabel
	}
	if name == "" {
		return m.From
	}
	return name + " (" + m.From + ")"
}

// describe renders a message's content: its text, or a bracketed
// description of a file or a place.
func describe(c Content) string {
	switch {
	case c.Kind == KindText:
		return oneLine(c.Text)
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

// lineBreaks turns every line break a message may hold into the two
// characters \n.
var lineBreaks = strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`, "\v", `\n`, "\f", `\n`,
	"\u0085", `\n`, "\u2028", `\n`, "\u2029", `\n`)

func oneLine(s string) string { return lineBreaks.Replace(s) }
