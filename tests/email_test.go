package tests

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The built binary, configured by SWITCHBOARD_SMTP_URL alone, delivers an
// accepted email to a real SMTP server, also when the process that accepted
// it died before delivery.
func TestEmailThroughTheConfiguredRelay(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		relay, err := smtptest.Start(smtptest.Options{Username: "switchboard", Password: "relay secret"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = relay.Close() })

		b := setup(t, dialect)
		acct := b.createAccount(t, "Mailer")
		headers := auth(acct.APIKey, acct.APISecret)

		api := b.serve(t, "--jobs=false", "--email-domain", "mail.acme.test")
		client := api.client(t)
		r := client.Do(http.MethodPost, "/v1/emails/"+acct.AccountID+"/create-email",
			map[string]any{"address": "Agent.Smith", "domain_name": "mail.acme.test"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, "agent.smith@mail.acme.test", r.JSON(t)["address"])
		r = client.Do(http.MethodPost, "/v1/emails/"+acct.AccountID+"/send", map[string]any{
			"sender_address": "agent.smith@mail.acme.test", "recipient_address": "ann@example.org",
			"subject": "Hello", "body": "Hello Ann", "headers": map[string]any{"bcc": "audit@example.org"},
		}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		emailID := r.JSON(t)["email_id"].(string)
		api.signal(t, syscall.SIGKILL)
		api.waitExit(t, 10*time.Second)
		require.Zero(t, relay.Attempts())

		server := b.serve(t, "--email-domain", "mail.acme.test", "--smtp-url", relay.URL())
		client = server.client(t)
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, "/v1/emails/"+acct.AccountID+"/messages/"+emailID, nil, headers...)
			return r.StatusCode == http.StatusOK && r.JSON(t)["data"].(map[string]any)["status"] == "sent"
		}, 30*time.Second, 50*time.Millisecond, "the queued email is sent after the restart")
		msgs := relay.Messages()
		require.Len(t, msgs, 1)
		require.Equal(t, "agent.smith@mail.acme.test", msgs[0].From)
		require.ElementsMatch(t, []string{"ann@example.org", "audit@example.org"}, msgs[0].To)
		require.Equal(t, 1, relay.Authentications())
		server.stop(t)
	})
}
