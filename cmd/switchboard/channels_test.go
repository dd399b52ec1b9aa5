package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
)

// run runs the CLI with args on a SQLite database in dir.
func run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	base := []string{"--database-url", "sqlite:" + filepath.Join(dir, "sb.db"), "--secret-key", strings.Repeat("ab", 32), "--json"}
	cmd.SetArgs(append(base, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestNumbersAddAndCheck(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, dir, "accounts", "create", "--name", "Acme")
	require.NoError(t, err)
	var acc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &acc))
	accountID := acc["account_id"].(string)

	tg := telegramfake.New(t, "111:token")
	wa := whatsappfake.New(t, "106540352242922", "EAAG", "+1 415-555-0120")

	// Each provider says what it needs.
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550121", "--service", "telegram", "--provider", "telegram")
	require.ErrorContains(t, err, "--bot-token")
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550120", "--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", "1")
	require.ErrorContains(t, err, "--access-token, --app-secret, --verify-token")
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550129", "--service", "whatsapp", "--bot-token", "x")
	require.ErrorContains(t, err, "apply to --provider telegram or whatsapp-cloud")
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550121", "--service", "telegram", "--provider", "telegram", "--bot-token", "1:x", "--api-base-url", "ftp://x")
	require.ErrorContains(t, err, "--api-base-url")

	out, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550121", "--service", "telegram", "--provider", "telegram",
		"--bot-token", "111:token", "--api-base-url", tg.URL)
	require.NoError(t, err, out)
	var tgNumber map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &tgNumber))
	require.Equal(t, "telegram", tgNumber["provider"])
	require.NotContains(t, out, "111:token", "the token is sealed, never printed")
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550120", "--service", "whatsapp", "--provider", "whatsapp-cloud",
		"--phone-number-id", "106540352242922", "--access-token", "EAAG", "--app-secret", "s", "--verify-token", "v",
		"--api-base-url", wa.URL, "--graph-version", whatsappfake.Version)
	require.NoError(t, err)
	// A token that the provider refuses, and a phone number id of another number.
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550122", "--service", "telegram", "--provider", "telegram",
		"--bot-token", "999:revoked", "--api-base-url", tg.URL)
	require.NoError(t, err)
	_, err = run(t, dir, "numbers", "add", "--account", accountID, "--number", "+14155550199", "--service", "whatsapp", "--provider", "whatsapp-cloud",
		"--phone-number-id", "106540352242922", "--access-token", "EAAG", "--app-secret", "s", "--verify-token", "v",
		"--api-base-url", wa.URL, "--graph-version", whatsappfake.Version)
	require.NoError(t, err)

	out, err = run(t, dir, "numbers", "check", "--account", accountID, "--public-url", "https://sb.example.com")
	require.ErrorContains(t, err, "2 of 4 numbers have problems")
	var results []checkResult
	require.NoError(t, json.Unmarshal([]byte(out), &results), out)
	byNumber := map[string]checkResult{}
	for _, r := range results {
		byNumber[r.Number] = r
	}
	require.True(t, byNumber["+14155550121"].OK, "%+v", byNumber["+14155550121"])
	require.Contains(t, byNumber["+14155550121"].Identity, "@switchboard_test_bot")
	require.True(t, byNumber["+14155550120"].OK, "%+v", byNumber["+14155550120"])
	require.Contains(t, byNumber["+14155550120"].Identity, "Switchboard Test")
	require.False(t, byNumber["+14155550122"].OK)
	require.Contains(t, strings.Join(byNumber["+14155550122"].Problems, " "), "getMe failed")
	require.False(t, byNumber["+14155550199"].OK)
	require.Contains(t, strings.Join(byNumber["+14155550199"].Problems, " "), "not +14155550199")

	out, err = run(t, dir, "numbers", "check", "--account", accountID, "--number", "+14155550121")
	require.NoError(t, err, out)
}
