package tests

import (
	"encoding/json"
	"net/http"
	"os/exec"
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
	require.Len(t, tools.Tools, 11)

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
