package tests

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// templateVerifier is the check of the A1Base Next.js template
// (a1baseai/a1base-nextjs-template, lib/security/webhook-verification.ts,
// verifyWebhook), written anew with Node's crypto: the x-timestamp header
// at most 300 s old and not in the future, and x-signature equal, in
// constant time, to the hex HMAC-SHA256 of x-timestamp followed by the raw
// body, keyed with A1BASE_API_SECRET. It reads
// {"timestamp","signature","body"} on stdin and prints valid or why not.
const templateVerifier = `
const crypto = require('crypto');
let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const { timestamp, signature, body } = JSON.parse(input);
  const age = Math.floor(Date.now() / 1000) - parseInt(timestamp, 10);
  if (!(age >= 0 && age <= 300)) { console.log('stale timestamp ' + timestamp); return; }
  const expected = Buffer.from(crypto.createHmac('sha256', process.env.A1BASE_API_SECRET).update(timestamp + body).digest('hex'));
  const received = Buffer.from(signature || '');
  console.log(expected.length === received.length && crypto.timingSafeEqual(expected, received) ? 'valid' : 'invalid signature');
});
`

// rawDelivery is one POST a receiver got: its raw body and headers.
type rawDelivery struct {
	body   string
	header http.Header
}

// rawReceiver records every POST on 127.0.0.1 and answers 204, verifying
// nothing itself: the tests verify each delivery as a client would.
type rawReceiver struct {
	URL string

	mu  sync.Mutex
	got []rawDelivery
}

func newRawReceiver(t *testing.T) *rawReceiver {
	t.Helper()
	rr := &rawReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rr.mu.Lock()
		rr.got = append(rr.got, rawDelivery{body: string(body), header: r.Header.Clone()})
		rr.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	rr.URL = srv.URL + "/api/whatsapp/incoming"
	return rr
}

// wait returns the nth delivery (1-based) once it has arrived.
func (rr *rawReceiver) wait(t *testing.T, n int) rawDelivery {
	t.Helper()
	ok := assertEventually(func() bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return len(rr.got) >= n
	})
	require.True(t, ok, "delivery %d should arrive", n)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.got[n-1]
}

// verifyLikeTemplate runs the template's check on d's x-timestamp and the
// given signature header with secret, and returns its verdict.
func verifyLikeTemplate(t *testing.T, node, secret string, d rawDelivery, signatureHeader string) string {
	t.Helper()
	in, err := json.Marshal(map[string]string{"timestamp": d.header.Get("x-timestamp"), "signature": d.header.Get(signatureHeader), "body": d.body})
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), node, "-e", templateVerifier)
	cmd.Env = append(processEnv(nil), "A1BASE_API_SECRET="+secret)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "node: %s", out)
	return strings.TrimSpace(string(out))
}

// verifyStandard checks d's webhook-signature with the Standard Webhooks
// reference library keyed with key.
func verifyStandard(t *testing.T, key []byte, d rawDelivery) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhookRaw(key)
	require.NoError(t, err)
	return wh.Verify([]byte(d.body), d.header)
}

// A template user sets the webhook's signing secret to the account's API
// secret (CLI, REST, GraphQL): an unmodified template then verifies every
// delivery's x-signature, and Standard Webhooks receivers verify
// webhook-signature keyed with the secret's bytes. A whsec_ secret keys
// webhook-signature with its decoded base64. Replacing the secret keeps
// the old one signing beside the new (x-signature-previous, a second v1
// entry) for the grace period. Short secrets are refused naming secret on
// every transport.
func TestWebhookSecretOfTheCustomersChoosing(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Template")
		rr := newRawReceiver(t)

		set := []string{"webhook", "set", "--account", acct.AccountID, "--url", rr.URL, "--allow-private-urls", "127.0.0.1/32"}
		stdout, stderr, code := b.cli(t, append(set, "--secret", "only-twenty-three-chars")...)
		require.Contains(t, requireOneLineError(t, stdout, stderr, code), "secret must be at least 24 characters")
		var hook webhookOut
		out := b.cliJSON(t, &hook, append(set, "--secret", acct.APISecret)...)
		require.Empty(t, hook.Secret, "a chosen secret is never shown")
		require.NotContains(t, out, acct.APISecret)

		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32")
		client := srv.client(t)
		headers := auth(acct.APIKey, acct.APISecret)
		hookPath := "/v1/accounts/" + acct.AccountID + "/webhook"
		test := func() {
			r := client.Do(http.MethodPost, hookPath+"/test", nil, headers...)
			require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
		}

		test()
		first := rr.wait(t, 1)
		require.Equal(t, "valid", verifyLikeTemplate(t, node, acct.APISecret, first, "x-signature"), "the template verifies with its API secret")
		require.Equal(t, "invalid signature", verifyLikeTemplate(t, node, acct.APISecret+"x", first, "x-signature"), "and refuses another secret")
		require.NoError(t, verifyStandard(t, []byte(acct.APISecret), first), "webhook-signature is keyed with the secret's bytes")
		require.Empty(t, first.header.Get("x-signature-previous"))

		for _, bad := range []any{"short", strings.Repeat("a", 257), "twenty-four characters with spaces", "whsec_not base64 at all!!!!"} {
			r := client.Do(http.MethodPut, hookPath, map[string]any{"url": rr.URL, "secret": bad}, headers...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%v: %s", bad, r.Body)
			require.Equal(t, []any{"body", "secret"}, r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"], "%v", bad)
		}
		var gql map[string]any
		postGraphQL(t, srv.URL, acct, `mutation { updateWebhook(input: {url: "`+rr.URL+`", secret: "short"}) { secret } }`, &gql)
		gqlErr := gql["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)
		require.Equal(t, "validation_error", gqlErr["code"], "%v", gql)
		require.Equal(t, []any{"secret"}, gqlErr["fields"].([]any)[0].(map[string]any)["path"], "%v", gql)

		// The same secret again changes nothing: no rotation starts.
		r := client.Do(http.MethodPut, hookPath, map[string]any{"url": rr.URL, "secret": acct.APISecret}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.NotContains(t, r.JSON(t)["data"], "previous_secret_expires_at")

		// A whsec_ secret of the customer's, set through GraphQL: the API
		// secret keeps signing beside it.
		raw := make([]byte, 32)
		_, err := rand.Read(raw)
		require.NoError(t, err)
		chosen := "whsec_" + base64.StdEncoding.EncodeToString(raw)
		gql = nil
		postGraphQL(t, srv.URL, acct, `mutation { updateWebhook(input: {url: "`+rr.URL+`", secret: "`+chosen+`"}) { secret webhook { previousSecretExpiresAt } } }`, &gql)
		update := gql["data"].(map[string]any)["updateWebhook"].(map[string]any)
		require.Nil(t, update["secret"], "%v", gql)
		require.NotNil(t, update["webhook"].(map[string]any)["previousSecretExpiresAt"], "%v", gql)

		test()
		second := rr.wait(t, 2)
		require.Equal(t, "valid", verifyLikeTemplate(t, node, chosen, second, "x-signature"), "x-signature is keyed with the whole new string")
		require.Equal(t, "valid", verifyLikeTemplate(t, node, acct.APISecret, second, "x-signature-previous"), "the old secret signs for the grace period")
		require.Len(t, strings.Fields(second.header.Get("webhook-signature")), 2, "two v1 signatures during the rotation")
		require.NoError(t, verifyStandard(t, raw, second), "webhook-signature is keyed with the decoded base64 of a whsec_ secret")
		require.NoError(t, verifyStandard(t, []byte(acct.APISecret), second), "and with the previous secret's bytes")
		wh, err := standardwebhooks.NewWebhook(chosen)
		require.NoError(t, err)
		require.NoError(t, wh.Verify([]byte(second.body), second.header), "the reference library's own reading of a whsec_ secret")
		srv.stop(t)
	})
}
