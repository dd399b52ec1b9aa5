package lint

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// markdownPages returns the README and every page of docs/, by their path
// from the repository's root, with their text.
func markdownPages(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, files, "docs/ holds the reference pages")
	pages := map[string]string{}
	for _, f := range append([]string{"../../README.md"}, files...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		name, err := filepath.Rel("../..", f)
		require.NoError(t, err)
		pages[filepath.ToSlash(name)] = string(b)
	}
	return pages
}

var (
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^\\s*```")
	// codeSpan is inline code.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// inlineLink is a Markdown link or image: [text](target) or ![alt](target).
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// proseLine is a line of a page outside fenced code blocks.
type proseLine struct {
	n    int // its line number
	text string
}

// prose returns a page's lines outside fenced code blocks, in order.
func prose(text string) []proseLine {
	var lines []proseLine
	open := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			open = !open
			continue
		}
		if !open {
			lines = append(lines, proseLine{n: i + 1, text: line})
		}
	}
	return lines
}

// links returns the targets of the links on a line, leaving out inline
// code, whose brackets are no links.
func links(line string) []string {
	var targets []string
	for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
		targets = append(targets, m[1])
	}
	return targets
}

// anchors returns the fragments a page's headings are reached by, as
// GitHub makes them: the heading's text in lower case, without
// punctuation, spaces turned into hyphens, and -1, -2, … after repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line.text)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.ReplaceAll(m[1], "`", "")) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// brokenLinks lists the relative links of pages (by path from the
// repository's root) that name no file of root, or no heading of the
// Markdown page they name.
func brokenLinks(root string, pages map[string]string) []string {
	var broken []string
	for name, text := range pages {
		for _, line := range prose(text) {
			for _, target := range links(line.text) {
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, fragment, _ := strings.Cut(target, "#")
				if file == "" {
					file = name
				} else {
					file = path.Join(path.Dir(name), file)
				}
				where := fmt.Sprintf("%s:%d: %s", name, line.n, target)
				body, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
				switch {
				case err != nil:
					broken = append(broken, where+" (no such file)")
				case fragment != "" && strings.HasSuffix(file, ".md") && !anchors(string(body))[fragment]:
					broken = append(broken, where+" (no such heading)")
				}
			}
		}
	}
	return broken
}

// Every relative link of the README and of docs/ reaches a file of the
// repository and, when it names a heading of a Markdown page, that heading.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	require.Empty(t, brokenLinks("../..", markdownPages(t)))
}

// The check finds a missing file and a missing heading, and passes the
// links GitHub resolves.
func TestDocsLinkCheckCatchesBrokenLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page := "# Agents (MCP)\n\n## A send, from `the handler`\n\n## A send, from `the handler`\n"
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "mcp.md"), []byte(page), 0o600))
	readme := "[ok](docs/mcp.md#agents-mcp) [ok](docs/mcp.md#a-send-from-the-handler-1) `[code](gone.md)`\n" +
		"[file](docs/gone.md) ![image](docs/gone.png) [heading](docs/mcp.md#agents)\n```\n[fenced](gone.md)\n```\n"
	broken := brokenLinks(dir, map[string]string{"README.md": readme, "docs/mcp.md": page})
	require.ElementsMatch(t, []string{
		"README.md:2: docs/gone.md (no such file)",
		"README.md:2: docs/gone.png (no such file)",
		"README.md:2: docs/mcp.md#agents (no such heading)",
	}, broken)
}

// Every page of docs/ is linked from the README, so that a reader finds
// it (and the examples test, which runs the pages the README links, runs
// it).
func TestDocsPagesAreLinkedFromTheREADME(t *testing.T) {
	t.Parallel()
	pages := markdownPages(t)
	linked := map[string]bool{}
	for _, line := range prose(pages["README.md"]) {
		for _, target := range links(line.text) {
			file, _, _ := strings.Cut(target, "#")
			linked[file] = true
		}
	}
	for name := range pages {
		if name != "README.md" {
			require.True(t, linked[name], "the README links to no %s", name)
		}
	}
}
