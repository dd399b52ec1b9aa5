package tests

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// An endpoint that asks for inline media (inline_media_max_bytes) gets a
// WhatsApp user's photo of at most that size as base64 data in the
// message.received delivery, signed like any other; a larger photo, or one
// the provider cannot serve, is delivered without data and with
// data_error; the setting refuses negative and over-cap sizes.
func TestInlineMediaEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Inline")
		small := bytes.Repeat([]byte("\xff\xd8\xff\xe0 small "), 100)
		large := bytes.Repeat([]byte("\xff\xd8\xff\xe0 large "), 20000)
		f.wa.AddMedia("media-inline-small", "image/jpeg", small)
		f.wa.AddMedia("media-inline-large", "image/jpeg", large)
		f.serve(t)
		api, hooks := f.api, f.hooks
		hookPath := "/v1/accounts/" + f.acct.AccountID + "/webhook"
		put := func(size any) (int, map[string]any) {
			r := api.client.Do(http.MethodPut, hookPath, map[string]any{"url": hooks.URL, "inline_media_max_bytes": size}, api.headers...)
			return r.StatusCode, r.JSON(t)
		}
		for _, bad := range []any{-1, 5<<20 + 1} {
			status, body := put(bad)
			require.Equal(t, http.StatusUnprocessableEntity, status, "%v: %v", bad, body)
			require.Equal(t, []any{"body", "inline_media_max_bytes"}, body["detail"].([]any)[0].(map[string]any)["loc"])
		}
		status, body := put(100_000)
		require.Equal(t, http.StatusOK, status, "%v", body)
		require.Equal(t, float64(100_000), body["data"].(map[string]any)["inline_media_max_bytes"])
		// Absent, the setting is kept.
		r := api.client.Do(http.MethodPut, hookPath, map[string]any{"url": hooks.URL}, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, float64(100_000), r.JSON(t)["data"].(map[string]any)["inline_media_max_bytes"])

		// GraphQL: the same setting and refusal.
		var gql map[string]any
		postGraphQL(t, f.srv.URL, f.acct, `{ webhook { inlineMediaMaxBytes } }`, &gql)
		require.Equal(t, map[string]any{"webhook": map[string]any{"inlineMediaMaxBytes": float64(100_000)}}, gql["data"], "%v", gql)
		gql = nil
		postGraphQL(t, f.srv.URL, f.acct, `mutation { updateWebhook(input: {url: "`+hooks.URL+`", inlineMediaMaxBytes: 6000000}) { webhook { url } } }`, &gql)
		require.Equal(t, "validation_error", gql["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)["code"], "%v", gql)

		photo := func(wamid, mediaID string) map[string]any {
			body := whatsappfake.MediaMessage(chWAPNID, chWADisplay, "14155550144", "Ines", wamid, "image",
				map[string]any{"id": mediaID, "mime_type": "image/jpeg", "sha256": "x", "caption": wamid})
			r := api.client.Do(http.MethodPost, "/v1/providers/whatsapp/"+f.waNum.NumberID+"/webhook", body,
				"X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
			require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)
			in := api.recent(t, api.thread(t, "individual", "Ines")["thread_id"].(string))[0]
			return hooks.waitOne(t, "message.received", in["message_id"].(string))["message_content"].(map[string]any)
		}
		got := photo("wamid.inline-small", "media-inline-small")
		require.Equal(t, base64.StdEncoding.EncodeToString(small), got["data"], "the photo's bytes, inline")
		require.NotContains(t, got, "data_error")
		require.Equal(t, "image/jpeg", got["mime_type"])
		require.NotEmpty(t, got["url"], "the link is there too")
		got = photo("wamid.inline-large", "media-inline-large")
		require.NotContains(t, got, "data")
		require.Equal(t, "too_large", got["data_error"])
		got = photo("wamid.inline-gone", "media-inline-gone")
		require.NotContains(t, got, "data")
		require.Equal(t, "unavailable", got["data_error"])
		require.Empty(t, hooks.rejections(), "every delivery is signed over the body it carries")
		f.srv.stop(t)
	})
}
