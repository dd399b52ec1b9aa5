package email

import (
	"html"
	"regexp"
	"strings"
)

// htmlTag finds the common HTML elements; a body containing one is HTML.
var htmlTag = regexp.MustCompile(`(?i)<(!doctype\s+html|html|head|body|p|div|br|span|a\s|table|tr|td|ul|ol|li|h[1-6]|b|i|em|strong|img\s|hr|blockquote|pre)\b[^>]*>`)

// LooksLikeHTML reports whether a body is HTML rather than plain text.
func LooksLikeHTML(body string) bool { return htmlTag.MatchString(body) }

var (
	dropBlocks = regexp.MustCompile(`(?is)<(head|script|style|title)\b.*?</(head|script|style|title)\s*>`)
	comments   = regexp.MustCompile(`(?s)<!--.*?-->`)
	lineBreaks = regexp.MustCompile(`(?i)<br\s*/?>|</(p|div|h[1-6]|tr|blockquote|pre|table|ul|ol)\s*>|<hr\b[^>]*>`)
	listItems  = regexp.MustCompile(`(?i)<li\b[^>]*>`)
	links      = regexp.MustCompile(`(?is)<a\b[^>]*\bhref\s*=\s*["']([^"']+)["'][^>]*>(.*?)</a\s*>`)
	anyTag     = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRuns  = regexp.MustCompile(`\n{3,}`)
	spaceRuns  = regexp.MustCompile(`[ \t]+`)
)

// TextFromHTML renders an HTML body as readable plain text for the
// text/plain alternative: block ends become line breaks, list items get a
// dash, links keep their target, tags go, entities are decoded.
func TextFromHTML(body string) string {
	s := dropBlocks.ReplaceAllString(body, "")
	s = comments.ReplaceAllString(s, "")
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	s = links.ReplaceAllStringFunc(s, func(m string) string {
		sub := links.FindStringSubmatch(m)
		text := strings.TrimSpace(anyTag.ReplaceAllString(sub[2], ""))
		if text == "" || text == sub[1] {
			return sub[1]
		}
		return text + " (" + sub[1] + ")"
	})
	s = listItems.ReplaceAllString(s, "\n- ")
	s = lineBreaks.ReplaceAllString(s, "\n")
	s = anyTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(spaceRuns.ReplaceAllString(l, " "))
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankRuns.ReplaceAllString(s, "\n\n"))
}
