package tests

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// mcpClientDir holds the TypeScript client (package.json, its lock file
// with exact versions, script.mjs); its node_modules are installed there
// once and kept.
const mcpClientDir = "mcp-client"

// An MCP client nobody here wrote, the official TypeScript SDK, against
// the built server over Streamable HTTP with the credential headers: it
// lists the tools, sends a message, is refused one (conversation not
// started) and a bad argument, reads the thread, waits for a message a
// user sends 2 s later, and reads the thread's transcript. The SDK checks
// every structured answer against its tool's output schema.
func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	installMCPClient(t)

	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	const agent, user, stranger = "+14155550100", "+14155550111", "+14155550112"
	b.addNumber(t, acct.AccountID, agent)
	p := b.serve(t)
	inbound := func(text string) string {
		r := p.client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": text, "sender_name": "Ann"},
			auth(acct.APIKey, acct.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		return r.JSON(t)["thread_id"].(string)
	}
	thread := inbound("Hi!")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "script.mjs")
	cmd.Dir = mcpClientDir
	cmd.Env = processEnv([]string{
		"SWITCHBOARD_URL=" + p.URL, "SWITCHBOARD_API_KEY=" + acct.APIKey, "SWITCHBOARD_API_SECRET=" + acct.APISecret,
		"AGENT_NUMBER=" + agent, "USER_NUMBER=" + user, "STRANGER_NUMBER=" + stranger, "THREAD_ID=" + thread,
	})
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	steps := map[string]json.RawMessage{}
	var sendLater sync.WaitGroup
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		var step struct {
			Step string `json:"step"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &step), "line: %s", lines.Text())
		steps[step.Step] = append(json.RawMessage(nil), lines.Bytes()...)
		if step.Step == "waiting" {
			sendLater.Go(func() {
				time.Sleep(2 * time.Second)
				inbound("Arrived later")
			})
		}
	}
	err = cmd.Wait()
	sendLater.Wait()
	require.NoError(t, err, "node script.mjs failed\nstderr:\n%s", stderr.String())

	t.Logf("%s", steps["connected"])
	var tools struct {
		Names []string `json:"names"`
	}
	require.NoError(t, json.Unmarshal(steps["tools"], &tools))
	require.Equal(t, []string{
		"create_cron_job", "delete_cron_job", "get_contact", "get_email", "get_media", "get_messages", "list_contacts", "list_cron_jobs", "list_emails", "list_templates",
		"list_threads", "manage_group", "mark_read", "pause_cron_job", "react", "reply_email", "resume_cron_job", "send_email", "send_message", "send_template",
		"send_typing", "set_agent_profile", "wait_for_message",
	}, tools.Names)

	type outcome struct {
		IsError bool           `json:"isError"`
		Result  map[string]any `json:"result"`
		Text    string         `json:"text"`
	}
	read := func(name string) outcome {
		var o outcome
		require.Contains(t, steps, name, "the script did not get to %s; stderr:\n%s", name, stderr.String())
		require.NoError(t, json.Unmarshal(steps[name], &o))
		return o
	}
	sent := read("sent")
	require.False(t, sent.IsError, "%v", sent.Result)
	require.Equal(t, "queued", sent.Result["status"])
	require.Equal(t, thread, sent.Result["thread_id"])

	refused := read("refused")
	require.True(t, refused.IsError)
	require.Equal(t, "conversation_not_started", refused.Result["code"])
	require.Contains(t, refused.Text, `"code":"conversation_not_started"`)

	invalid := read("invalid")
	require.True(t, invalid.IsError)
	require.Equal(t, "validation_error", invalid.Result["code"])
	require.Contains(t, invalid.Result["message"], "timeout_seconds")

	messages := read("messages")
	require.False(t, messages.IsError)
	list := messages.Result["messages"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, "Hello from TypeScript", list[0].(map[string]any)["text"], "newest first")

	marked := read("marked")
	require.False(t, marked.IsError, "%v", marked.Result)
	require.Equal(t, true, marked.Result["read_receipts"])
	require.Equal(t, float64(1), marked.Result["marked_read"], "the user's one message became read")
	typing := read("typing")
	require.False(t, typing.IsError, "%v", typing.Result)
	require.Equal(t, true, typing.Result["sent"])

	waited := read("waited")
	require.False(t, waited.IsError, "%v", waited.Result)
	require.Equal(t, false, waited.Result["timed_out"])
	require.Equal(t, "Arrived later", waited.Result["message"].(map[string]any)["text"])
	var elapsed struct {
		Ms int `json:"elapsed_ms"`
	}
	require.NoError(t, json.Unmarshal(steps["waited"], &elapsed))
	require.GreaterOrEqual(t, elapsed.Ms, 2000, "the wait lasted until the message came")
	require.Less(t, elapsed.Ms, 15000, "the message ended the wait, not its timeout")

	var transcript struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(steps["transcript"], &transcript))
	require.Regexp(t, `(?m)^\[[0-9TZ:-]+\] Ann \(\+14155550111\): Hi!$`, transcript.Text)
	require.Regexp(t, `(?m)^\[[0-9TZ:-]+\] agent \(\+14155550100\): Hello from TypeScript$`, transcript.Text)
	require.Regexp(t, `(?m)^\[[0-9TZ:-]+\] Ann \(\+14155550111\): Arrived later$`, transcript.Text)
	require.Contains(t, steps, "closed")
}

// requireNode returns the path of Node.js 20 or newer, and fails the test
// (it never skips) when there is none.
func requireNode(t *testing.T) string {
	t.Helper()
	const install = "install Node.js 20 or newer with npm (Debian: apt-get install nodejs npm)"
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the MCP client test runs the TypeScript SDK: %s", install)
	_, err = exec.LookPath("npm")
	require.NoError(t, err, "the MCP client test installs the TypeScript SDK with npm: %s", install)
	out, err := exec.Command(node, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`^v(\d+)\.`).FindSubmatch(out)
	require.NotNil(t, m, "node --version: %s", out)
	major, _ := strconv.Atoi(string(m[1]))
	require.GreaterOrEqual(t, major, 20, "node is %s: %s", strings.TrimSpace(string(out)), install)
	return node
}

// installMCPClient installs the client's exact dependencies (npm ci) into
// its node_modules, unless the ones there were installed from the same
// lock file.
func installMCPClient(t *testing.T) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(mcpClientDir, "package-lock.json"))
	require.NoError(t, err)
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(mcpClientDir, "node_modules", ".installed-from-lock")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = mcpClientDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm ci in tests/%s:\n%s", mcpClientDir, out)
	require.NoError(t, os.WriteFile(stamp, []byte(want), 0o644))
}
