package messaging

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Transcript renders messages as plain text for a reader (a person or a
// language model): one line per message, in the order given (callers pass
// them oldest first), each
//
//	[2026-11-25T10:00:00Z] Ann (+14155550123): text
//
// The sender is the user's name and number, or "Agent" and the agent
// number for what the account sent. Media and locations are described in
// words with their URL or coordinates; line breaks inside a message are
// written as "\n", so that a line is always one message. A message that
// failed says so and why, since the recipient never saw it.
func Transcript(msgs []messaging.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("[")
		b.WriteString(m.CreatedAt.UTC().Format(time.RFC3339))
		b.WriteString("] ")
		b.WriteString(transcriptSender(m))
		b.WriteString(": ")
		b.WriteString(oneLine(transcriptContent(m.Content)))
		if m.Status == messaging.Failed {
			b.WriteString(" (not delivered")
			if m.FailureCode != "" {
				b.WriteString(": " + m.FailureCode)
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// transcriptSender names who wrote m.
func transcriptSender(m messaging.Message) string {
	name := m.SenderName
	if name == "" && m.Direction == messaging.OutboundAPI {
		name = "Agent"
	}
	if name == "" || name == m.From {
		return m.From
	}
	return name + " (" + m.From + ")"
}

// transcriptContent describes c in words.
func transcriptContent(c messaging.Content) string {
	switch {
	case c.Kind == messaging.KindText:
		return c.Text
	case c.Kind.IsMedia():
		s := fmt.Sprintf("[%s %s %s]", article(string(c.Kind)), c.Kind, c.MediaURL)
		if c.Caption != "" {
			s += " " + c.Caption
		}
		return s
	case c.Kind == messaging.KindLocation:
		place := strings.Join(nonEmpty(c.PlaceName, c.Address), ", ")
		if place != "" {
			place += " "
		}
		return fmt.Sprintf("[a location: %sat %.6f, %.6f]", place, c.Latitude, c.Longitude)
	}
	return fmt.Sprintf("[a %s message]", c.Kind)
}

// article is "an" before a vowel: "an image", "a video".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func nonEmpty(values ...string) []string {
	out := values[:0:0]
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// lineBreaks writes every kind of line break as the two characters \n.
var lineBreaks = strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`)

// oneLine keeps a message on its line.
func oneLine(s string) string { return lineBreaks.Replace(s) }
