package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A key revoked with the CLI stops working on a running server within
// about a second (its revocation watcher), although the server keeps
// verified credentials for a minute: the CLI cannot reach the server's
// cache, and before the watcher the key went on working until the cache
// TTL ran out.
func TestKeyRevokedWithTheCLIStopsOnRunningServers(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Revoked")
		srv := b.serve(t, "--auth-cache-ttl", "1m")
		client := srv.client(t)
		path := "/v1/accounts/" + acct.AccountID
		require.Equal(t, http.StatusOK, client.Do(http.MethodGet, path, nil, auth(acct.APIKey, acct.APISecret)...).StatusCode,
			"the server verifies the key and keeps it")

		var revoked listedKey
		b.cliJSON(t, &revoked, "keys", "revoke", "--account", acct.AccountID, "--key", acct.KeyID)
		start := time.Now()
		require.Eventually(t, func() bool {
			return client.Do(http.MethodGet, path, nil, auth(acct.APIKey, acct.APISecret)...).StatusCode == http.StatusUnauthorized
		}, 10*time.Second, 20*time.Millisecond, "the revoked key still works on the running server")
		t.Logf("revoked key refused %s after the CLI returned", time.Since(start).Round(time.Millisecond))
	})
}
