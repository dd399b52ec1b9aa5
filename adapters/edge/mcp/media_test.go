package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
)

// get_media shows the agent a photo a WhatsApp user sent as image content,
// with its signed link; a document comes as its link only.
func TestGetMedia(t *testing.T) {
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		const pnid, secret = "106540352242922", "app-secret-0123456789abcdef"
		fake := whatsappfake.New(t, pnid, "EAAG-token", "+1 415-555-0120")
		n, err := b.acc.AddNumber(ctx, accounts.NumberInput{AccountID: b.acme.accountID, Number: "+14155550120", Service: "whatsapp",
			Provider: "whatsapp-cloud", Settings: fake.Settings(secret, "verify"), Enabled: true})
		require.NoError(t, err)
		photo := bytes.Repeat([]byte("\x89PNG\r\n\x1a\n"), 1000)
		fake.AddMedia("media-photo", "image/png", photo)
		fake.AddMedia("media-doc", "application/pdf", []byte("%PDF-1.7 an invoice"))
		deliver := func(wamid, typ string, media map[string]any) {
			body := whatsappfake.MediaMessage(pnid, "+1 415-555-0120", "14155550111", "Ann", wamid, typ, media)
			req, err := http.NewRequest(http.MethodPost, b.base+"/v1/providers/whatsapp/"+n.ID+"/webhook", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Hub-Signature-256", whatsappfake.Sign(body, secret))
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, http.StatusOK, res.StatusCode)
		}
		deliver("wamid.photo", "image", map[string]any{"id": "media-photo", "mime_type": "image/png", "sha256": "x"})
		deliver("wamid.doc", "document", map[string]any{"id": "media-doc", "mime_type": "application/pdf", "sha256": "x", "filename": "invoice.pdf"})
		var photoID, docID string
		require.NoError(t, b.db.Bun().NewRaw("SELECT id FROM messages WHERE provider_message_id = 'wamid.photo'").Scan(ctx, &photoID))
		require.NoError(t, b.db.Bun().NewRaw("SELECT id FROM messages WHERE provider_message_id = 'wamid.doc'").Scan(ctx, &docID))

		cs := b.connect(t, b.acme)
		res := call(t, cs, "get_media", map[string]any{"message_id": photoID})
		require.False(t, res.IsError, text(res))
		require.Len(t, res.Content, 2)
		image, isImage := res.Content[0].(*sdk.ImageContent)
		require.True(t, isImage, "the image itself, to look at")
		require.Equal(t, photo, image.Data)
		require.Equal(t, "image/png", image.MIMEType)
		var answer struct {
			MediaType string `json:"media_type"`
			MimeType  string `json:"mime_type"`
			Size      int64  `json:"size"`
			URL       string `json:"url"`
			Inline    bool   `json:"inline"`
		}
		decode(t, res, &answer)
		require.Equal(t, "image", answer.MediaType)
		require.True(t, answer.Inline)
		require.Equal(t, int64(len(photo)), answer.Size)
		// The signed link streams the same bytes without credentials.
		link, err := url.Parse(answer.URL)
		require.NoError(t, err)
		got, err := http.Get(b.base + link.RequestURI())
		require.NoError(t, err)
		defer got.Body.Close()
		body, err := io.ReadAll(got.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.StatusCode)
		require.Equal(t, photo, body)

		var doc struct {
			MediaType string `json:"media_type"`
			FileName  string `json:"file_name"`
			URL       string `json:"url"`
			Inline    bool   `json:"inline"`
		}
		ok(t, cs, "get_media", map[string]any{"message_id": docID}, &doc)
		require.Equal(t, "document", doc.MediaType)
		require.Equal(t, "invoice.pdf", doc.FileName)
		require.False(t, doc.Inline)
		require.NotEmpty(t, doc.URL)

		// Another account's message, and a message without media.
		require.Equal(t, "not_found", fails(t, b.connect(t, b.other), "get_media", map[string]any{"message_id": photoID}).Code)
		textID, _ := b.inbound(t, b.acme, userA, agentA, "hello")
		require.Equal(t, "not_found", fails(t, cs, "get_media", map[string]any{"message_id": textID}).Code)
	})
}

// decode reads a call's structured content into out.
func decode(t *testing.T, res *sdk.CallToolResult, out any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out))
}
