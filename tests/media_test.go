package tests

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A user sends a photo to the built binary on the WhatsApp fake and on the
// Telegram fake: the customer's webhook receives the message with a
// signed link that streams the exact bytes and type without credentials,
// and the agent opens the photo through REST with its credentials and
// through MCP's get_media (the image itself, in the official SDK's
// client).
func TestInboundPhotoEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Photos")
		waPhoto := bytes.Repeat([]byte("\xff\xd8\xff\xe0 e2e WhatsApp JPEG "), 20000)
		f.wa.AddMedia("media-e2e-photo", "image/jpeg", waPhoto)
		tgPhoto := bytes.Repeat([]byte("\xff\xd8\xff\xe0 e2e Telegram JPEG "), 15000)
		f.tg.AddFile("AgAD-e2e-large", tgPhoto)
		f.serve(t)
		api := f.api
		cs := connectMCP(t, f.srv, f.acct)

		// opens checks every way of opening the photo of message id.
		opens := func(t *testing.T, id string, photo []byte) {
			received := f.hooks.waitOne(t, "message.received", id)
			content := received["message_content"].(map[string]any)
			require.Equal(t, "image", content["media_type"])
			require.Equal(t, "image/jpeg", content["mime_type"])
			link, err := url.Parse(content["url"].(string))
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(link.Path, "/v1/media/"+f.acct.AccountID+"/"), "a Switchboard link: %s", link)

			res, err := http.Get(f.srv.URL + link.RequestURI())
			require.NoError(t, err)
			got, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode, "body: %.300s", got)
			require.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))
			require.Equal(t, photo, got, "the exact bytes, without credentials")

			r := api.client.Do(http.MethodGet, "/v1/messages/"+f.acct.AccountID+"/media/"+id, nil, api.headers...)
			require.Equal(t, http.StatusOK, r.StatusCode, "with credentials: %.300s", r.Body)
			require.Equal(t, photo, r.Body, "the exact bytes, with the account's credentials")

			mcp, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_media", Arguments: map[string]any{"message_id": id}})
			require.NoError(t, err)
			require.False(t, mcp.IsError, "%v", mcp.Content)
			image, ok := mcp.Content[0].(*sdk.ImageContent)
			require.True(t, ok, "the image itself: %T", mcp.Content[0])
			require.Equal(t, "image/jpeg", image.MIMEType)
			require.Equal(t, photo, image.Data, "the exact bytes, through MCP")
		}

		f.waPost(t, whatsappfake.MediaMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e.photo", "image",
			map[string]any{"id": "media-e2e-photo", "mime_type": "image/jpeg", "sha256": "x", "caption": "the view"}))
		wa := api.recent(t, api.thread(t, "individual", "Sheena Nelson")["thread_id"].(string))[0]
		require.Equal(t, "image", wa["message_type"])
		opens(t, wa["message_id"].(string), waPhoto)

		// Telegram sends a photo in several sizes: the largest is kept.
		f.tgPoster(t)(telegramfake.PrivateMedia(9101, 41, 777000444, "Dora", "photo", []any{
			map[string]any{"file_id": "AgAD-e2e-small", "file_unique_id": "s", "file_size": 1201, "width": 90, "height": 67},
			map[string]any{"file_id": "AgAD-e2e-large", "file_unique_id": "l", "file_size": len(tgPhoto), "width": 1280, "height": 960},
		}, "the harbour"))
		tg := api.recent(t, api.thread(t, "individual", "Dora")["thread_id"].(string))[0]
		require.Equal(t, "image", tg["message_type"])
		opens(t, tg["message_id"].(string), tgPhoto)

		// Another account's credentials do not open it.
		r := api.client.Do(http.MethodGet, "/v1/messages/"+f.other.AccountID+"/media/"+tg["message_id"].(string), nil,
			auth(f.other.APIKey, f.other.APISecret)...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's photo: %s", r.Body)
	})
}
