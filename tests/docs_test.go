package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// skippedExamples lists the shell blocks of the README and docs/ that
// TestDocsExamples does not run, by the start of their first line, with
// the reason. Every other ```sh block runs; an entry that matches no block
// fails the test, so the list cannot go stale.
var skippedExamples = map[string]string{
	"make run    #": "starts the demo server (this test starts it) and runs the whole suite",
	"python3 -c '":  "starts the tour's receiver on 127.0.0.1:9000 (this test starts its own)",
	"switchboard numbers add --account acc_… --service telegram": "needs a real Telegram bot token",
	"switchboard serve --public-url":                             "starts a second server that registers a webhook with Telegram",
	"switchboard numbers add --account acc_… --service whatsapp": "needs real WhatsApp Cloud API credentials",
	"SWITCHBOARD_SMTP_URL='smtp://AKIA…":                         "starts servers that send through real SMTP relays",
	"make release":                                               "cross-compiles two binaries (minutes; built by hand when the Makefile changes)",
	"sudo useradd --system":                                      "installs a system service as root",
	"openssl genrsa -out /etc/switchboard/dkim-acme.pem":         "writes to /etc and needs DNS records",
}

// docPage is one Markdown file whose examples run.
type docPage struct {
	name string // path from the repository's root: README.md, docs/email.md
	text []byte
}

// docLink is a link from the README to a page of docs/.
var docLink = regexp.MustCompile(`\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)`)

// docPages returns the README and then each page of docs/ in the order the
// README first links to it, as a reader meets them. A page the README
// does not link to fails the test: it would be neither found nor run.
func docPages(t *testing.T) []docPage {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	pages := []docPage{{name: "README.md", text: readme}}
	linked := map[string]bool{}
	for _, m := range docLink.FindAllSubmatch(readme, -1) {
		name := string(m[1])
		if linked[name] {
			continue
		}
		linked[name] = true
		text, err := os.ReadFile(filepath.Join("..", name))
		require.NoError(t, err, "the README links to %s", name)
		pages = append(pages, docPage{name: name, text: text})
	}
	files, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	for _, f := range files {
		name := "docs/" + filepath.Base(f)
		require.True(t, linked[name], "the README links to no %s", name)
	}
	return pages
}

// shellBlock is one fenced shell block of a page.
type shellBlock struct {
	line  int      // the page's line of the block's first line of code
	lines []string // the code, without the fence's indentation
}

// shellBlocks returns the ```sh blocks of a page, indented ones (inside
// list items) included.
func shellBlocks(t *testing.T, page docPage) []shellBlock {
	t.Helper()
	var (
		blocks []shellBlock
		open   bool   // inside a fenced block
		indent string // of the open fence
		shell  bool   // the open block is shell
	)
	fence := regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")
	sc := bufio.NewScanner(bytes.NewReader(page.text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case !open && m != nil:
			open, indent = true, m[1]
			shell = m[2] == "sh" || m[2] == "bash" || m[2] == "shell"
			if shell {
				blocks = append(blocks, shellBlock{line: n + 1})
			}
		case open && m != nil && m[2] == "" && m[1] == indent:
			open = false
		case open && shell:
			last := &blocks[len(blocks)-1]
			last.lines = append(last.lines, strings.TrimPrefix(line, indent))
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, open, "%s has an unclosed code block", page.name)
	return blocks
}

// placeholder is an id the examples leave out: acc_…, thr_…, crn_….
var placeholder = regexp.MustCompile(`\b([a-z]+)_…`)

// examplesPrelude is sourced (BASH_ENV) before the examples run: every
// curl fails on a non-2xx answer and records what it received, so that an
// id the examples leave out ("thr_…") can stand for the newest of its kind
// an earlier answer gave. The first failing command stops the run and is
// named with its line of the script, which the test turns into the page's.
const examplesPrelude = `set -eu -o pipefail
trap 'echo "examples:$LINENO: exit $?: $BASH_COMMAND" >&2' ERR
curl() {
	local out
	if out=$(command curl --fail-with-body --show-error --max-time 20 "$@"); then
		printf '%s\n' "$out" >>"$SB_ANSWERS"
		printf '%s\n' "$out"
	else
		local status=$?
		printf '%s\n' "$out"
		return "$status"
	fi
}
sb_last() {
	local id
	id=$(grep -o "$1_[0-9A-Za-z]*" "$SB_ANSWERS" | tail -n 1)
	[ -n "$id" ] || { echo "no earlier answer holds an id $1_…" >&2; return 1; }
	printf '%s' "$id"
}
`

// TestDocsExamples runs the shell examples of the README and of docs/, as
// a newcomer pastes them, in one shell against `serve --demo` on
// 127.0.0.1: the curl commands and the CLI, with a local receiver standing
// in for the one on port 9000. Any answer other than 2xx, or a curl error,
// fails it. The blocks in skippedExamples are left out, and logged.
//
// It needs bash and curl (apt-get install curl); it fails, not skips,
// without them. The examples' localhost:8080 and 127.0.0.1:8080 are the
// server's address, 127.0.0.1:9000 the receiver's, the demo's printed
// account, key and secret fill acc_…, swk_… and sws_…, and any other
// "kind_…" is the newest id of that kind in an earlier answer.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs test runs the examples with %s: apt-get install %s", tool, tool)
		}
	}
	pages := docPages(t)

	recv := newReceiver(t)
	b := setupEmpty(t, store.SQLite)
	srv := b.serve(t, "--demo")
	m := srv.waitStdout(t, demoCurl)
	accountID, key, secret := m[1], m[2], m[3]
	server, err := url.Parse(srv.URL)
	require.NoError(t, err)
	receiver, err := url.Parse(recv.URL)
	require.NoError(t, err)

	substitute := strings.NewReplacer(
		"localhost:8080", server.Host, "127.0.0.1:8080", server.Host,
		"127.0.0.1:9000", receiver.Host,
		"acc_…", accountID, "swk_…", key, "sws_…", secret,
	)
	// The script is the pages one after another, each keeping its line
	// numbers: line offsets[i]+n of the script is line n of pages[i],
	// blank outside the blocks that run.
	var (
		script  []string
		offsets []int
		used    = map[string]bool{}
		ran     = 0
	)
	for _, page := range pages {
		offset := len(script)
		offsets = append(offsets, offset)
		script = append(script, make([]string, bytes.Count(page.text, []byte("\n"))+1)...)
		for _, blk := range shellBlocks(t, page) {
			first := strings.TrimSpace(blk.lines[0])
			skipped := false
			for prefix, reason := range skippedExamples {
				if strings.HasPrefix(first, prefix) {
					t.Logf("%s:%d not run (%s): %s", page.name, blk.line, reason, first)
					used[prefix], skipped = true, true
				}
			}
			if skipped {
				continue
			}
			ran++
			for i, line := range blk.lines {
				line = substitute.Replace(line)
				line = placeholder.ReplaceAllString(line, `$$(sb_last $1)`)
				script[offset+blk.line-1+i] = line
			}
		}
	}
	for prefix := range skippedExamples {
		require.True(t, used[prefix], "skippedExamples names %q, which starts no ```sh block of the README or docs/", prefix)
	}
	require.GreaterOrEqual(t, ran, 8, "the examples that run")

	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(binary, filepath.Join(dir, "bin", "switchboard")))
	prelude := filepath.Join(dir, "prelude.sh")
	require.NoError(t, os.WriteFile(prelude, []byte(examplesPrelude), 0o600))
	scriptFile := filepath.Join(dir, "examples.sh")
	require.NoError(t, os.WriteFile(scriptFile, []byte(strings.Join(script, "\n")), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptFile)
	cmd.Dir = dir
	// The CLI (./bin/switchboard) works on the server's database.
	cmd.Env = processEnv([]string{"BASH_ENV=" + prelude, "SB_ANSWERS=" + filepath.Join(dir, "answers"),
		"SWITCHBOARD_DATABASE_URL=" + b.dbURL})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		where := ""
		if m := regexp.MustCompile(`(?m)^examples:(\d+): exit \d+`).FindStringSubmatch(out.String()); m != nil {
			n, _ := strconv.Atoi(m[1])
			i := len(offsets) - 1
			for offsets[i] >= n {
				i--
			}
			line := n - offsets[i]
			where = fmt.Sprintf("%s:%d: %s", pages[i].name, line, strings.Split(string(pages[i].text), "\n")[line-1])
		}
		t.Fatalf("the examples fail (%v) at\n%s\n\noutput:\n%s", err, where, tail(out.String(), 4000))
	}

	// The webhook the README's tour sets reached the local receiver.
	recv.waitCalled(t, "/hooks", 15*time.Second)
	srv.stop(t)
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("[…]%s", s[len(s)-n:])
}
