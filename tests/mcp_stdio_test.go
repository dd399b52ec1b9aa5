package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// `switchboard mcp` serves a running server's tools over standard input
// and output with the credentials of its environment: a client that
// starts it, as a desktop client does, lists and calls them.
func TestMCPOverStandardIO(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	b.addNumber(t, acct.AccountID, "+14155550100")
	p := b.serve(t)
	r := p.client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
		map[string]any{"service": "whatsapp", "from": "+14155550111", "to": "+14155550100", "message": "Hi!", "sender_name": "Ann"},
		auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)

	cmd := exec.Command(binary, "mcp", "--url", p.URL)
	cmd.Dir = t.TempDir()
	cmd.Env = processEnv([]string{"SWITCHBOARD_API_KEY=" + acct.APIKey, "SWITCHBOARD_API_SECRET=" + acct.APISecret})
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "desktop"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr: %s", stderr.String())
	defer func() {
		require.NoError(t, cs.Close())
		require.NotContains(t, stderr.String(), acct.APISecret, "the secret is never logged")
	}()

	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 23, "every tool, mark_read, send_typing, react, get_media, list_contacts, get_contact, list_templates, send_template, set_agent_profile, list_emails, get_email and reply_email included")

	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_threads", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	var list struct {
		Threads []struct {
			ThreadID string `json:"thread_id"`
		} `json:"threads"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Threads, 1)

	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
		"service": "whatsapp", "from": "+14155550100", "to": "+14155550111", "text": "Hello Ann"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)

	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout_seconds": 1}})
	require.NoError(t, err)
	raw, _ = json.Marshal(res.StructuredContent)
	require.JSONEq(t, `{"timed_out":true}`, string(raw))

	// The server stops cleanly with the session open: its event stream
	// does not hold the shutdown.
	p.stop(t)
}

// `switchboard mcp` refuses, before any connection, a server URL that
// could send the credentials in the clear or to another party (http to
// another machine, a user name or password in it), from --url and from
// SWITCHBOARD_URL alike, and never prints a password.
func TestMCPOverStandardIORefusesUnsafeURLs(t *testing.T) {
	t.Parallel()
	credentials := []string{"SWITCHBOARD_API_KEY=swk_key", "SWITCHBOARD_API_SECRET=sws_apisecret"}
	for _, c := range []struct {
		env  []string
		args []string
		says string
	}{
		{nil, []string{"--url", "http://switchboard.example.com"}, "use https://"},
		{[]string{"SWITCHBOARD_URL=http://10.0.0.1:8080"}, nil, "use https://"},
		{nil, []string{"--url", "https://user:hunter2pw@switchboard.example.com"}, "must not carry a user name or password"},
		{[]string{"SWITCHBOARD_URL=http://user:hunter2pw@127.0.0.1:1"}, nil, "must not carry a user name or password"},
		{nil, []string{"--url", "https://user:hunter2pw@switchboard example.com"}, "does not parse"},
	} {
		stdout, stderr, code := runCLI(t, append(c.env, credentials...), append([]string{"mcp"}, c.args...)...)
		require.Equal(t, 1, code, "%v %v: %s", c.env, c.args, stderr)
		require.Contains(t, stderr, c.says, "%v %v", c.env, c.args)
		require.NotContains(t, stderr, "hunter2pw", "%v %v: the password is never printed", c.env, c.args)
		require.NotContains(t, stderr, "sws_apisecret", "%v %v", c.env, c.args)
		require.Empty(t, stdout)
	}
}

// `switchboard mcp` follows no redirect: a server that redirects to
// another origin gets an error naming it, the credentials never reach it,
// and nothing printed holds the Location's password or the secret.
func TestMCPOverStandardIOFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	there, err := url.Parse(elsewhere.URL)
	require.NoError(t, err)
	there.User = url.UserPassword("intruder", "locationpassword")
	there.Path = "/mcp"
	redirecting := httptest.NewServer(http.RedirectHandler(there.String(), http.StatusFound))
	t.Cleanup(redirecting.Close)

	stdout, stderr, code := runCLI(t, []string{"SWITCHBOARD_API_KEY=swk_key", "SWITCHBOARD_API_SECRET=sws_apisecret"},
		"mcp", "--url", redirecting.URL)
	require.Zero(t, reached.Load(), "the redirect was not followed: %s", stderr)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "302, a redirect to "+elsewhere.URL)
	require.NotContains(t, stderr, "locationpassword")
	require.NotContains(t, stderr, "sws_apisecret")
	require.Empty(t, stdout)
}
