package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// fetched is an answer read with a plain client, without credentials.
type fetched struct {
	status int
	header http.Header
	body   []byte
	// err is the error reading the body ended with (a cut connection).
	err error
}

// fetch GETs a URL with no credentials, reading the body to its end.
func fetch(t *testing.T, rawURL string, headers ...string) fetched {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return fetched{status: res.StatusCode, header: res.Header, body: body, err: err}
}

func (f fetched) code(t *testing.T) string {
	t.Helper()
	var e struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(f.body, &e), "body: %s", f.body)
	return e.Code
}

// latestInbound is the newest message of the user's thread, as get-recent
// shows it.
func (b *chanBundle) latestInbound(t *testing.T, name string) map[string]any {
	t.Helper()
	thread := b.threadOf(t, "individual", name)
	return b.recent(t, thread["thread_id"].(string))[0].(map[string]any)
}

// eventPayload is the body of the message.received event about a
// message, which webhook deliveries post.
func (b *chanBundle) eventPayload(t *testing.T, messageID string) map[string]any {
	t.Helper()
	var raw []byte
	require.NoError(t, b.db.Bun().NewRaw("SELECT payload FROM events WHERE type = 'message.received' AND payload LIKE ?", "%"+messageID+"%").
		Scan(context.Background(), &raw))
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

// A user sends a photo on each provider: the agent sees a media message
// with a signed link that streams the exact bytes without credentials,
// and the same bytes with credentials; tampered, expired and foreign
// links are refused.
func TestInboundMediaStreams(t *testing.T) {
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupChannels(t, dialect)
		photo := bytes.Repeat([]byte("\xff\xd8\xff\xe0JFIF"), 40000)

		// WhatsApp: an image with a caption.
		b.wa.AddMedia("1003383421387256", "image/jpeg", photo)
		body := whatsappfake.MediaMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.photo1", "image",
			map[string]any{"id": "1003383421387256", "mime_type": "image/jpeg", "sha256": "x", "caption": "the view"})
		require.Equal(t, http.StatusOK, b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret)).StatusCode)
		wa := b.latestInbound(t, "Sheena Nelson")
		require.Equal(t, "image", wa["message_type"])
		media := wa["media"].(map[string]any)
		require.Equal(t, "image/jpeg", media["mime_type"])
		require.Equal(t, "image", media["media_type"])
		link := media["url"].(string)
		require.Equal(t, link, wa["attachment_uri"])
		require.True(t, strings.HasPrefix(link, b.url+"/v1/media/"+b.account+"/"+wa["message_id"].(string)+"?"), link)
		require.NotContains(t, link, b.wa.URL, "never the provider's URL")

		// The webhook payload carries the signed link.
		content := b.eventPayload(t, wa["message_id"].(string))["message_content"].(map[string]any)
		require.Equal(t, "image/jpeg", content["mime_type"])
		require.Equal(t, "the view", content["caption"])
		signed := content["url"].(string)
		require.True(t, strings.HasPrefix(signed, b.url+"/v1/media/"+b.account+"/"), signed)

		got := fetch(t, signed)
		require.Equal(t, http.StatusOK, got.status, "body: %.300s", got.body)
		require.NoError(t, got.err)
		require.Equal(t, photo, got.body, "the exact bytes")
		require.Equal(t, "image/jpeg", got.header.Get("Content-Type"))
		require.Equal(t, "nosniff", got.header.Get("X-Content-Type-Options"))

		// With the account's credentials, at the account's path.
		r := b.get("/v1/messages/" + b.account + "/media/" + wa["message_id"].(string))
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %.300s", r.Body)
		require.Equal(t, photo, r.Body)
		// Another account's credentials find no such message.
		requireError(t, b.client.Do(http.MethodGet, "/v1/messages/"+b.other+"/media/"+wa["message_id"].(string), nil, b.otherAuth()...),
			http.StatusNotFound, "not_found")
		// A message without media has none.
		b.whatsappPost(t, whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.text1", "and?"),
			whatsappfake.Sign(whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.text1", "and?"), waSecret))
		text := b.latestInbound(t, "Sheena Nelson")
		require.Nil(t, text["media"])
		requireError(t, b.get("/v1/messages/"+b.account+"/media/"+text["message_id"].(string)), http.StatusNotFound, "not_found")

		// Tampered, expired, and another account's signed links.
		u, err := url.Parse(signed)
		require.NoError(t, err)
		q := u.Query()
		sig := q.Get("signature")
		q.Set("signature", strings.ToUpper(sig[:1])+sig[1:]+"A")
		u.RawQuery = q.Encode()
		bad := fetch(t, u.String())
		require.Equal(t, http.StatusForbidden, bad.status)
		require.Equal(t, "media_link_invalid", bad.code(t))
		q = u.Query()
		q.Set("signature", sig)
		q.Set("expires", "4102444800") // a later expiry under the old signature
		u.RawQuery = q.Encode()
		require.Equal(t, "media_link_invalid", fetch(t, u.String()).code(t))
		m := domain.Message{ID: wa["message_id"].(string), AccountID: b.account, Content: domain.Content{Kind: domain.KindImage, MediaRef: "x"}}
		expired := fetch(t, b.links.Link(m, time.Now().Add(-2*time.Hour)))
		require.Equal(t, http.StatusForbidden, expired.status)
		require.Equal(t, "media_link_expired", expired.code(t))
		m.AccountID = b.other
		foreign := fetch(t, b.links.Link(m, time.Now()))
		require.Equal(t, http.StatusNotFound, foreign.status, "a good signature for another account's path finds no message")

		// Telegram: a photo in sizes, the largest one opened.
		b.tg.AddFile("AgAD-large", photo)
		update := telegramfake.PrivateMedia(900, 77, 987654321, "Alice", "photo", []any{
			map[string]any{"file_id": "AgAD-small", "file_unique_id": "s", "file_size": 1201, "width": 90, "height": 67},
			map[string]any{"file_id": "AgAD-large", "file_unique_id": "l", "file_size": len(photo), "width": 1280, "height": 960},
		}, "")
		require.Equal(t, http.StatusOK, b.telegramUpdate(t, update, b.tgSecret).StatusCode)
		tg := b.latestInbound(t, "Alice")
		tgMedia := tg["media"].(map[string]any)
		require.Equal(t, float64(len(photo)), tgMedia["size"])
		got = fetch(t, tgMedia["url"].(string))
		require.Equal(t, http.StatusOK, got.status, "body: %.300s", got.body)
		require.Equal(t, photo, got.body)
		require.Equal(t, "image/jpeg", got.header.Get("Content-Type"), "the type the update gave, not the file server's octet-stream")
	})
}

// The provider's refusals: media it no longer has is 404 with its own
// code; a file declared or sent larger than its kind's limit is refused,
// the undeclared one cut off at the limit.
func TestInboundMediaRefusals(t *testing.T) {
	t.Parallel()
	b := setupChannels(t, store.SQLite)
	post := func(wamid, mediaID string) string {
		body := whatsappfake.MediaMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", wamid, "image",
			map[string]any{"id": mediaID, "mime_type": "image/jpeg", "sha256": "x"})
		require.Equal(t, http.StatusOK, b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret)).StatusCode)
		return b.latestInbound(t, "Sheena Nelson")["media"].(map[string]any)["url"].(string)
	}
	gone := fetch(t, post("wamid.gone", "404404404"))
	require.Equal(t, http.StatusNotFound, gone.status)
	require.Equal(t, "provider_media_not_found", gone.code(t))

	// 2 GB declared: refused before a byte is read.
	b.wa.AddMediaFile("huge", whatsappfake.MediaFile{MimeType: "image/jpeg", Size: 2 << 30, Open: func() io.Reader { return io.LimitReader(zeros{}, 2<<30) }})
	huge := fetch(t, post("wamid.huge", "huge"))
	require.Equal(t, http.StatusBadGateway, huge.status)
	require.Equal(t, "media_too_large", huge.code(t))

	// 2 GB undeclared: streamed up to the 5 MB image limit, then cut.
	b.wa.AddMediaFile("chunked", whatsappfake.MediaFile{MimeType: "image/jpeg", Open: func() io.Reader { return io.LimitReader(zeros{}, 2<<30) }})
	cut := fetch(t, post("wamid.chunked", "chunked"))
	require.Equal(t, http.StatusOK, cut.status, "the answer started before the limit was reached")
	require.Error(t, cut.err, "the connection is cut: no client takes the part for the whole")
	require.LessOrEqual(t, int64(len(cut.body)), domain.MaxMediaBytes(domain.KindImage))
}

// The sandbox simulates an inbound photo from a URL: the agent opens it
// through its signed link, fetched through the SSRF guard.
func TestSandboxInboundMedia(t *testing.T) {
	t.Parallel()
	b := setupChannels(t, store.SQLite)
	media := newMediaServer(t)
	r := b.post("/v1/sandbox/"+b.account+"/inbound", map[string]any{"service": "whatsapp", "from": "+14155550177", "to": agentSandbox,
		"message_type": "media", "media_url": media + "/image.png", "media_type": "image", "caption": "a photo", "sender_name": "Sam"})
	require.Equal(t, http.StatusOK, r.StatusCode, "inbound: %s", r.Body)
	photo := b.latestInbound(t, "Sam")
	link := photo["media"].(map[string]any)["url"].(string)
	require.Equal(t, link, photo["attachment_uri"], "the signed link, not the simulation's URL")
	got := fetch(t, link)
	require.Equal(t, http.StatusOK, got.status, "body: %.300s", got.body)
	want := fetch(t, media+"/image.png")
	require.Equal(t, want.body, got.body)
	require.Equal(t, "image/png", got.header.Get("Content-Type"))
}

// zeros is an endless file of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
