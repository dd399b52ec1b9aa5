package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

type webhookOut struct {
	AccountID string   `json:"account_id"`
	URL       string   `json:"url"`
	Enabled   bool     `json:"enabled"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
}

// The operator sets, shows and rotates an account's webhook from the CLI.
func TestCLIWebhook(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.createAccount(t, "Hooks")

		var set webhookOut
		b.cliJSON(t, &set, "webhook", "set", "--account", acc.AccountID, "--url", "https://example.com/hooks", "--events", "message.received,message.sent")
		require.Equal(t, webhookOut{AccountID: acc.AccountID, URL: "https://example.com/hooks", Enabled: true,
			Events: []string{"message.received", "message.sent"}, Secret: set.Secret}, set)
		require.True(t, strings.HasPrefix(set.Secret, "whsec_"), "the first set prints the secret once")

		var shown webhookOut
		raw := b.cliJSON(t, &shown, "webhook", "show", "--account", acc.AccountID)
		require.Empty(t, shown.Secret)
		require.NotContains(t, raw, set.Secret)

		var rotated webhookOut
		b.cliJSON(t, &rotated, "webhook", "rotate-secret", "--account", acc.AccountID)
		require.True(t, strings.HasPrefix(rotated.Secret, "whsec_"))
		require.NotEqual(t, set.Secret, rotated.Secret)

		_, stderr, code := b.cli(t, "webhook", "set", "--account", acc.AccountID, "--url", "https://169.254.169.254/latest")
		require.NotZero(t, code)
		require.Contains(t, stderr, "not allowed")
		_, stderr, code = b.cli(t, "webhook", "set", "--account", acc.AccountID, "--url", "http://example.com/hooks")
		require.NotZero(t, code)
		require.Contains(t, stderr, "https")
	})
}
