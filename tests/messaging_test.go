package tests

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A send that was answered "queued" is durable: killing the server before
// delivery loses nothing, and the restarted server delivers it.
func TestAcceptedSendSurvivesServerKill(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Durable")
		b.addNumber(t, acct.AccountID, "+15550000001")
		headers := auth(acct.APIKey, acct.APISecret)

		// An API-only process: it accepts and stores sends, but runs no jobs,
		// so the message is certainly still queued when it dies.
		api := b.serve(t, "--jobs=false")
		client := api.client(t)
		r := client.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": "+14155550123", "to": "+15550000001", "message": "hello"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPost, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": "+15550000001", "to": "+14155550123", "content": "still there?"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		sent := r.JSON(t)
		require.Equal(t, "queued", sent["status"])
		messageID := sent["message_id"].(string)

		api.signal(t, syscall.SIGKILL)
		api.waitExit(t, 10*time.Second)

		restarted := b.serve(t)
		client = restarted.client(t)
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, "/v1/messages/individual/"+acct.AccountID+"/get-details/"+messageID, nil, headers...)
			return r.StatusCode == http.StatusOK && r.JSON(t)["data"].(map[string]any)["status"] == "delivered"
		}, 30*time.Second, 50*time.Millisecond, "the queued message is delivered after the restart")
		restarted.stop(t)
	})
}
