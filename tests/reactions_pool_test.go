package tests

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// More inbound messages at once than the pool has connections: each holds
// a connection for its transaction while the webhook fan-out, which runs in
// that transaction, reads the account's endpoint. The read goes through
// the transaction; when it waited for a connection of its own, every
// connection was held by a transaction waiting for one, and each message
// got a 503 at its deadline.
func TestInboundBurstLargerThanThePool(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Burst")
		const agent = "+15550003003"
		b.addNumber(t, acct.AccountID, agent)
		hooks := newHookReceiver(t)
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
		hooks.setSecret(t, hook.Secret)
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--db-max-conns", "2")
		client := srv.client(t)

		const burst = 12
		ids := make([]string, burst)
		var wg sync.WaitGroup
		for i := range burst {
			wg.Go(func() {
				r := client.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
					map[string]any{"service": "whatsapp", "from": fmt.Sprintf("+1415556%04d", i), "to": agent, "message": "hi"},
					auth(acct.APIKey, acct.APISecret)...)
				if r.StatusCode == http.StatusOK {
					ids[i], _ = r.JSON(t)["message_id"].(string)
				} else {
					t.Errorf("inbound message %d: %d %s", i, r.StatusCode, r.Body)
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id == "" {
				continue // reported above
			}
			require.Eventually(t, func() bool { return len(hooks.find("message.received", id)) == 1 }, chWait, chTick,
				"message %s gets its webhook", id)
		}
		require.Empty(t, hooks.rejections())
	})
}
