package tests

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// --production without an SMTP relay refuses to start, saying how to fix
// it, unless the sandbox mailbox is asked for; a relay and the sandbox
// together are refused too.
func TestProductionNeedsARelayOrTheSandboxAskedFor(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	for _, start := range []struct {
		env  []string
		args []string
	}{
		{args: []string{"--production"}},
		{env: []string{"SWITCHBOARD_PRODUCTION=true"}},
	} {
		stdout, stderr, code := runCLI(t, append(b.env, start.env...), append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", b.dbURL}, start.args...)...)
		msg := requireOneLineError(t, stdout, stderr, code)
		require.Contains(t, msg, "--production needs an SMTP relay")
		require.Contains(t, msg, "set SWITCHBOARD_SMTP_URL (--smtp-url)")
		require.Contains(t, msg, "set SWITCHBOARD_SANDBOX_EMAIL=1 (--sandbox-email)")
	}

	stdout, stderr, code := runCLI(t, b.env, "serve", "--addr", "127.0.0.1:0", "--database-url", b.dbURL,
		"--sandbox-email", "--smtp-url", "smtp://relay.example.com:587")
	require.Contains(t, requireOneLineError(t, stdout, stderr, code), "not both")

	srv := startServer(t, append(b.env, "SWITCHBOARD_SANDBOX_EMAIL=1"), "--database-url", b.dbURL, "--production")
	srv.stop(t)
}

// mailboxPage is the sandboxMailbox field as a test reads it.
type mailboxPage struct {
	Enabled    bool `json:"enabled"`
	TotalCount int  `json:"totalCount"`
	Nodes      []struct {
		Subject string `json:"subject"`
	} `json:"nodes"`
}

// sandboxMailbox reads the account's sandbox mailbox through a server's
// GraphQL endpoint.
func sandboxMailbox(t *testing.T, base string, acct createdAccount) mailboxPage {
	t.Helper()
	var out struct {
		Data struct {
			SandboxMailbox mailboxPage `json:"sandboxMailbox"`
		} `json:"data"`
		Errors []any `json:"errors"`
	}
	postGraphQL(t, base, acct, "{ sandboxMailbox(first: 10) { enabled totalCount nodes { subject } } }", &out)
	require.Empty(t, out.Errors)
	return out.Data.SandboxMailbox
}

// Two replicas on one Postgres database show one sandbox mailbox: emails
// accepted by the replica that runs no jobs and delivered by the other are
// listed by both, within the configured per-account bound.
func TestReplicasShareTheSandboxMailbox(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	acct := b.createAccount(t, "Mailer")
	bound := []string{"--database-url", b.dbURL, "--sandbox-account-emails", "2"}
	delivering := launchServer(t, b.env, bound...)
	api := launchServer(t, b.env, append(bound, "--jobs=false")...)
	delivering.waitListening(t)
	api.waitListening(t)

	client := api.client(t)
	headers := auth(acct.APIKey, acct.APISecret)
	r := client.Do(http.MethodPost, "/v1/emails/"+acct.AccountID+"/create-email",
		map[string]any{"address": "agent.smith", "domain_name": "mail.switchboard.local"}, headers...)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	for i := range 3 {
		r = client.Do(http.MethodPost, "/v1/emails/"+acct.AccountID+"/send", map[string]any{
			"sender_address": "agent.smith@mail.switchboard.local", "recipient_address": "ann@example.org",
			"subject": fmt.Sprintf("Report %d", i), "body": "Hello Ann",
		}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		id := r.JSON(t)["email_id"].(string)
		// One after another, so that the mailbox's order is the sends'.
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, "/v1/emails/"+acct.AccountID+"/messages/"+id, nil, headers...)
			return r.StatusCode == http.StatusOK && r.JSON(t)["data"].(map[string]any)["status"] == "sent"
		}, 30*time.Second, 50*time.Millisecond, "the other replica delivers the email")
	}
	for _, srv := range []*serverProc{api, delivering} {
		box := sandboxMailbox(t, srv.URL, acct)
		require.True(t, box.Enabled)
		require.Equal(t, 2, box.TotalCount, "the per-account bound holds")
		require.Len(t, box.Nodes, 2)
		require.Equal(t, "Report 2", box.Nodes[0].Subject)
		require.Equal(t, "Report 1", box.Nodes[1].Subject)
	}
}
