package tests

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A WhatsApp user sends a photo to the built binary: the customer's
// webhook receives the message with a signed link, and the link streams
// the exact bytes and type without credentials.
func TestInboundPhotoEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		wa := whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)
		photo := bytes.Repeat([]byte("\xff\xd8\xff\xe0 e2e JPEG "), 20000)
		wa.AddMedia("media-e2e-photo", "image/jpeg", photo)
		hooks := newHookReceiver(t)

		b := setup(t, dialect)
		acct := b.createAccount(t, "Photos")
		var waNum numberOut
		b.cliJSON(t, &waNum, "numbers", "add", "--account", acct.AccountID, "--number", chWAAgent,
			"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
			"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", wa.URL)
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
		hooks.setSecret(t, hook.Secret)
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32")
		api := &chAPI{client: srv.client(t), base: srv.URL, account: acct.AccountID, headers: auth(acct.APIKey, acct.APISecret)}

		body := whatsappfake.MediaMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e.photo", "image",
			map[string]any{"id": "media-e2e-photo", "mime_type": "image/jpeg", "sha256": "x", "caption": "the view"})
		r := api.client.Do(http.MethodPost, "/v1/providers/whatsapp/"+waNum.NumberID+"/webhook", body,
			"X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
		require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)
		in := api.recent(t, api.thread(t, "individual", "Sheena Nelson")["thread_id"].(string))[0]
		require.Equal(t, "image", in["message_type"])

		received := hooks.waitOne(t, "message.received", in["message_id"].(string))
		content := received["message_content"].(map[string]any)
		require.Equal(t, "image", content["media_type"])
		require.Equal(t, "image/jpeg", content["mime_type"])
		require.Equal(t, "the view", content["caption"])
		link, err := url.Parse(content["url"].(string))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(link.Path, "/v1/media/"+acct.AccountID+"/"), "a Switchboard link: %s", link)

		res, err := http.Get(srv.URL + link.RequestURI())
		require.NoError(t, err)
		defer res.Body.Close()
		got, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "body: %.300s", got)
		require.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))
		require.Equal(t, photo, got, "the exact bytes, without credentials")
		srv.stop(t)
	})
}
