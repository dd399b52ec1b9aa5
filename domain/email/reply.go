package email

import (
	"regexp"
	"strings"
)

// ExtractReply is the text of a reply without the history it quotes, as
// a line-based rule over the plain-text part:
//
//   - the text ends before the first attribution line of a quote: a line
//     starting "On " and ending "wrote:" (also when a client wrapped it
//     onto a second line), and its German, French and Spanish forms
//     ("Am … schrieb …:", "Le … a écrit :", "El … escribió:");
//   - or before Outlook's "-----Original Message-----" line, a line of
//     underscores, or a header block of the quoted email: a "From:" line
//     followed within three lines by "Sent:" or "Date:";
//   - lines starting with ">" (quoted lines, also between the parts of an
//     inline answer) are left out;
//   - blank lines at either end are trimmed.
//
// A text that is nothing but quotation yields "".
func ExtractReply(text string) string {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t")
		trimmed := strings.TrimSpace(line)
		if startsQuote(lines, i, trimmed) {
			break
		}
		if strings.HasPrefix(trimmed, ">") {
			continue
		}
		kept = append(kept, line)
	}
	for len(kept) > 0 && strings.TrimSpace(kept[0]) == "" {
		kept = kept[1:]
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	return strings.Join(kept, "\n")
}

var (
	// attribution matches a quote's attribution line in the languages
	// ExtractReply knows.
	attribution = regexp.MustCompile(`(?i)^(on\s.+\swrote:|am\s.+\sschrieb.*:|le\s.+\sa\s+écrit\s*:|el\s.+\sescribió:)$`)
	// attributionStart matches the first line of an attribution a client
	// wrapped onto two lines.
	attributionStart = regexp.MustCompile(`(?i)^(on|am|le|el)\s`)
	// attributionEnd matches its second line.
	attributionEnd = regexp.MustCompile(`(?i)(wrote:|schrieb.*:|a\s+écrit\s*:|escribió:)$`)
	// originalMessage matches Outlook's separators.
	originalMessage = regexp.MustCompile(`(?i)^-{2,}\s*original message\s*-{2,}$|^_{10,}$`)
)

// startsQuote reports whether line i (trimmed) starts the quoted history.
func startsQuote(lines []string, i int, trimmed string) bool {
	switch {
	case attribution.MatchString(trimmed), originalMessage.MatchString(trimmed):
		return true
	case attributionStart.MatchString(trimmed) && i+1 < len(lines) && attributionEnd.MatchString(strings.TrimSpace(lines[i+1])) &&
		!strings.HasPrefix(strings.TrimSpace(lines[i+1]), ">"):
		return true
	case hasFieldName(trimmed, "from"):
		for j := i + 1; j < len(lines) && j <= i+3; j++ {
			next := strings.TrimSpace(lines[j])
			if hasFieldName(next, "sent") || hasFieldName(next, "date") {
				return true
			}
		}
	}
	return false
}

// hasFieldName reports whether line starts with name and a colon, in any
// case ("From:", "*From:*" as Outlook writes it in plain text).
func hasFieldName(line, name string) bool {
	line = strings.TrimLeft(line, "*")
	return len(line) > len(name) && strings.EqualFold(line[:len(name)], name) && line[len(name)] == ':'
}
