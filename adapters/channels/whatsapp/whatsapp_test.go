package whatsapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/channeltest"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

const (
	pnid      = "106540352242922"
	display   = "+1 415-555-0100"
	appSecret = "4f1c7e2b9d0a4c8e8b6f3a2d1e0c9b8a"
	verify    = "my-verify-token"
)

var number = account.Number{ID: "num_wa", AccountID: "acc_1", Number: "+14155550100", Service: account.WhatsApp, Provider: account.ProviderWhatsAppCloud, Enabled: true}

func TestContract(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channeltest.Bundle {
		fake := whatsappfake.New(t, pnid, "EAAtoken", display)
		return channeltest.Bundle{Provider: &whatsapp.Provider{Client: whatsapp.NewClient()}, Number: number,
			Settings: fake.Settings(appSecret, verify), Recipient: "+14155550111", MediaURL: "https://media.example.com/cat.png"}
	})
}

func TestSendRequests(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	ctx := context.Background()
	send := func(c domain.Content) messaging.Receipt {
		r, err := p.Send(ctx, messaging.Outbound{MessageID: "msg_x", Number: number, Settings: fake.Settings(appSecret, verify), ThreadTyp: domain.Individual, To: "+14155550111", Content: c})
		require.NoError(t, err)
		return r
	}
	r := send(domain.Content{Kind: domain.KindText, Text: "hi"})
	require.Equal(t, fake.LastID(), r.ProviderMessageID)
	require.Equal(t, domain.Sent, r.Status)
	send(domain.Content{Kind: domain.KindImage, MediaURL: "https://m.example.com/i.png", Caption: "pic"})
	send(domain.Content{Kind: domain.KindAudio, MediaURL: "https://m.example.com/a.mp3"})
	send(domain.Content{Kind: domain.KindDocument, MediaURL: "https://m.example.com/d.pdf", Caption: "doc"})
	send(domain.Content{Kind: domain.KindVideo, MediaURL: "https://m.example.com/v.mp4"})
	send(domain.Content{Kind: domain.KindLocation, Latitude: 52.5, Longitude: 13.4, PlaceName: "Berlin", Address: "Pariser Platz"})
	s := fake.Sends()
	require.Len(t, s, 6)
	require.Equal(t, "14155550111", s[0]["to"], "the Cloud API takes the number without +")
	require.Equal(t, map[string]any{"preview_url": false, "body": "hi"}, s[0]["text"])
	require.Equal(t, map[string]any{"link": "https://m.example.com/i.png", "caption": "pic"}, s[1]["image"])
	require.Equal(t, map[string]any{"link": "https://m.example.com/a.mp3"}, s[2]["audio"])
	require.Equal(t, "document", s[3]["type"])
	require.Equal(t, "video", s[4]["type"])
	require.Equal(t, map[string]any{"latitude": 52.5, "longitude": 13.4, "name": "Berlin", "address": "Pariser Platz"}, s[5]["location"])
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	for code, want := range map[int]struct {
		code      string
		permanent bool
	}{
		131047: {"re_engagement_required", true},
		131030: {"recipient_not_allowed", true},
		130429: {"rate_limited", false},
		131000: {"provider_unavailable", false},
		100:    {"provider_rejected", true},
	} {
		to := fmt.Sprintf("1415555%04d", code%10000)
		fake.Fail(to, code)
		_, err := p.Send(context.Background(), messaging.Outbound{Number: number, Settings: fake.Settings(appSecret, verify), To: "+" + to, Content: domain.Content{Kind: domain.KindText, Text: "x"}})
		var pe *messaging.ProviderError
		require.ErrorAs(t, err, &pe, "code %d", code)
		require.Equal(t, want.code, pe.Code, "code %d", code)
		require.Equal(t, want.permanent, pe.Permanent, "code %d", code)
		require.Contains(t, pe.Message, fmt.Sprint(code))
	}
	bad := fake.Settings(appSecret, verify)
	bad["access_token"] = "expired"
	_, err := p.Send(context.Background(), messaging.Outbound{Number: number, Settings: bad, To: "+14155550111", Content: domain.Content{Kind: domain.KindText, Text: "x"}})
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "provider_auth_failed", pe.Code)
	require.True(t, pe.Permanent)

	who, err := whatsapp.NewClient().LookupNumber(context.Background(), fake.Settings(appSecret, verify))
	require.NoError(t, err)
	require.Equal(t, whatsapp.Digits(number.Number), whatsapp.Digits(who.DisplayPhoneNumber))
}

// inbox records what webhooks deliver, storing each message id once.
type inbox struct {
	mu       sync.Mutex
	numbers  map[string]account.Number
	settings map[string]map[string]string
	messages []channels.Inbound
	ids      map[string]bool
	statuses []channels.StatusReport
	groups   []channels.GroupUpdate
}

func newInbox() *inbox {
	return &inbox{numbers: map[string]account.Number{number.ID: number}, settings: map[string]map[string]string{
		number.ID: {"phone_number_id": pnid, "access_token": "t", "app_secret": appSecret, "verify_token": verify},
	}, ids: map[string]bool{}}
}

func (b *inbox) Number(_ context.Context, p account.Provider, id string) (account.Number, map[string]string, error) {
	n, ok := b.numbers[id]
	if !ok || p != n.Provider {
		return account.Number{}, nil, failure.NotFound("number")
	}
	return n, b.settings[id], nil
}

func (b *inbox) Receive(_ context.Context, in channels.Inbound) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ids[in.ProviderMessageID] {
		b.ids[in.ProviderMessageID] = true
		b.messages = append(b.messages, in)
	}
	return nil
}

func (b *inbox) Status(_ context.Context, n account.Number, st channels.StatusReport) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statuses = append(b.statuses, st)
	return nil
}

func (b *inbox) GroupReported(_ context.Context, _ account.Number, u channels.GroupUpdate) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.groups = append(b.groups, u)
	return nil
}

func (b *inbox) Numbers(_ context.Context, p account.Provider) ([]account.Number, error) {
	var out []account.Number
	for _, n := range b.numbers {
		out = append(out, n)
	}
	return out, nil
}

func (b *inbox) NumberSettings(n account.Number) (map[string]string, error) {
	return b.settings[n.ID], nil
}

func (b *inbox) count() int { b.mu.Lock(); defer b.mu.Unlock(); return len(b.messages) }

func TestVerifyHandshake(t *testing.T) {
	t.Parallel()
	in := &whatsapp.Inbound{Inbox: newInbox()}
	ctx := context.Background()
	got, err := in.Verify(ctx, number.ID, "subscribe", verify, "1158201444")
	require.NoError(t, err)
	require.Equal(t, "1158201444", got)
	for name, c := range map[string][2]string{
		"wrong token": {"subscribe", "my-verify-tokem"}, "empty token": {"subscribe", ""},
		"wrong mode": {"unsubscribe", verify}, "prefix": {"subscribe", verify[:5]},
	} {
		_, err := in.Verify(ctx, number.ID, c[0], c[1], "1158201444")
		require.True(t, failure.Is(err, failure.KindForbidden), "%s: %v", name, err)
	}
	_, err = in.Verify(ctx, "num_unknown", "subscribe", verify, "1")
	require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
}

func TestSignatures(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box, Siblings: box}
	ctx := context.Background()
	for i := range 1000 {
		body := whatsappfake.TextMessage(pnid, display, "14155550111", "Sheena", fmt.Sprintf("wamid.ok%04d", i), fmt.Sprintf("message %d", i))
		require.NoError(t, in.Webhook(ctx, number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	require.Equal(t, 1000, box.count(), "every correctly signed payload is accepted")

	body := whatsappfake.TextMessage(pnid, display, "14155550111", "Sheena", "wamid.forged", "forged")
	good := whatsappfake.Sign(body, appSecret)
	flipped := bytes.Clone(body)
	flipped[len(flipped)/2] ^= 1
	var generic any
	require.NoError(t, json.Unmarshal(body, &generic))
	reserialised, _ := json.MarshalIndent(generic, "", " ")
	sha1Header := "sha1=" + good[len("sha256="):]
	tampered := []struct {
		name      string
		body      []byte
		signature string
	}{
		{"one byte flipped", flipped, good},
		{"wrong secret", body, whatsappfake.Sign(body, appSecret+"x")},
		{"sha1 prefix", body, sha1Header},
		{"re-serialised JSON", reserialised, good},
		{"missing header", body, ""},
		{"no prefix", body, good[len("sha256="):]},
		{"truncated", body, good[:len(good)-2]},
		{"not hex", body, "sha256=zz" + good[len("sha256=")+2:]},
		{"upper-case prefix", body, "SHA256=" + good[len("sha256="):]},
	}
	for _, c := range tampered {
		err := in.Webhook(ctx, number.ID, c.signature, c.body)
		require.True(t, failure.Is(err, failure.KindUnauthenticated), "%s: %v", c.name, err)
	}
	require.Equal(t, 1000, box.count(), "no tampered payload is accepted")

	// A replayed payload is stored once.
	require.NoError(t, in.Webhook(ctx, number.ID, good, body))
	require.NoError(t, in.Webhook(ctx, number.ID, good, body))
	require.Equal(t, 1001, box.count())
}

func TestInboundContent(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	ctx := context.Background()
	post := func(body []byte) {
		require.NoError(t, in.Webhook(ctx, number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	post(whatsappfake.TextMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.t1", "Does it come in another color?"))
	post(whatsappfake.ImageMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.i1", "1003383421387256", "look"))
	post(whatsappfake.Status(pnid, display, "wamid.out1", "14155550111", "delivered", 0))
	post(whatsappfake.Status(pnid, display, "wamid.out2", "14155550111", "failed", 131047))
	post(whatsappfake.Status(pnid, display, "wamid.out3", "14155550111", "read", 0))
	// A change about a phone number id nobody registered is skipped.
	post(whatsappfake.TextMessage("999999999", display, "14155550111", "X", "wamid.other", "not ours"))

	require.Len(t, box.messages, 2)
	text, image := box.messages[0], box.messages[1]
	require.Equal(t, "+14155550111", text.Sender.ChatID)
	require.Equal(t, "Sheena Nelson", text.Sender.Name)
	require.Equal(t, "Does it come in another color?", text.Content.Text)
	require.Equal(t, "wamid.t1", text.ProviderMessageID)
	require.Equal(t, domain.Content{Kind: domain.KindImage, MediaRef: "1003383421387256", MimeType: "image/jpeg", Caption: "look"}, image.Content,
		"the media id, never the Graph API's URL")

	require.Len(t, box.statuses, 3)
	require.Equal(t, channels.StatusReport{ProviderMessageID: "wamid.out1", Status: domain.Delivered}, box.statuses[0])
	require.Equal(t, domain.Failed, box.statuses[1].Status)
	require.Equal(t, "re_engagement_required", box.statuses[1].Code)
	require.Contains(t, box.statuses[1].Text, "24 hours")
	require.Equal(t, domain.Read, box.statuses[2].Status)
}

// Every kind of media a user sends is a media message with the media id
// and what the notification says of the file.
func TestInboundMediaKinds(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	post := func(wamid, typ string, media map[string]any) {
		body := whatsappfake.MediaMessage(pnid, display, "14155550111", "Sheena Nelson", wamid, typ, media)
		require.NoError(t, in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	post("wamid.v1", "video", map[string]any{"id": "m-video", "mime_type": "video/mp4", "sha256": "x", "caption": "clip"})
	post("wamid.a1", "audio", map[string]any{"id": "m-voice", "mime_type": "audio/ogg; codecs=opus", "sha256": "x", "voice": true})
	post("wamid.a2", "audio", map[string]any{"id": "m-audio", "mime_type": "audio/mpeg", "sha256": "x", "voice": false})
	post("wamid.d1", "document", map[string]any{"id": "m-doc", "mime_type": "application/pdf", "sha256": "x", "filename": "invoice.pdf", "caption": "Q3"})
	post("wamid.s1", "sticker", map[string]any{"id": "m-sticker", "mime_type": "image/webp", "sha256": "x", "animated": false})

	require.Equal(t, []domain.Content{
		{Kind: domain.KindVideo, MediaRef: "m-video", MimeType: "video/mp4", Caption: "clip"},
		{Kind: domain.KindAudio, MediaRef: "m-voice", MimeType: "audio/ogg; codecs=opus", Variant: domain.VariantVoice},
		{Kind: domain.KindAudio, MediaRef: "m-audio", MimeType: "audio/mpeg"},
		{Kind: domain.KindDocument, MediaRef: "m-doc", MimeType: "application/pdf", FileName: "invoice.pdf", Caption: "Q3"},
		{Kind: domain.KindImage, MediaRef: "m-sticker", MimeType: "image/webp", Variant: domain.VariantSticker},
	}, contents(box.messages))
}

func contents(ms []channels.Inbound) []domain.Content {
	out := make([]domain.Content, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

// OpenMedia looks the media object up and streams its download URL, both
// with the number's access token; an id the Graph API does not know is
// gone.
func TestOpenMedia(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	ctx := context.Background()
	photo := []byte("\xff\xd8\xff\xe0 a JPEG")
	fake.AddMedia("1003383421387256", "image/jpeg", photo)

	stream, err := p.OpenMedia(ctx, fake.Settings(appSecret, verify), "1003383421387256")
	require.NoError(t, err)
	got, err := io.ReadAll(stream.Body)
	require.NoError(t, err)
	require.NoError(t, stream.Body.Close())
	require.Equal(t, photo, got)
	require.Equal(t, "image/jpeg", stream.MimeType)
	require.Equal(t, int64(len(photo)), stream.Size)

	_, err = p.OpenMedia(ctx, fake.Settings(appSecret, verify), "404404404")
	require.ErrorIs(t, err, domain.ErrMediaGone)

	wrong := fake.Settings(appSecret, verify)
	wrong["access_token"] = "EAAother"
	_, err = p.OpenMedia(ctx, wrong, "1003383421387256")
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "provider_auth_failed", pe.Code)
}

func TestSiblingNumbers(t *testing.T) {
	t.Parallel()
	box := newInbox()
	sibling := account.Number{ID: "num_wa2", AccountID: "acc_2", Number: "+14155550102", Service: account.WhatsApp, Provider: account.ProviderWhatsAppCloud, Enabled: true}
	stranger := account.Number{ID: "num_wa3", AccountID: "acc_3", Number: "+14155550103", Service: account.WhatsApp, Provider: account.ProviderWhatsAppCloud, Enabled: true}
	box.numbers[sibling.ID], box.numbers[stranger.ID] = sibling, stranger
	box.settings[sibling.ID] = map[string]string{"phone_number_id": "222", "app_secret": appSecret}
	box.settings[stranger.ID] = map[string]string{"phone_number_id": "333", "app_secret": "another app"}
	in := &whatsapp.Inbound{Inbox: box, Siblings: box}
	ctx := context.Background()
	for _, id := range []string{"222", "333"} {
		body := whatsappfake.TextMessage(id, display, "14155550111", "S", "wamid.to"+id, "hi "+id)
		require.NoError(t, in.Webhook(ctx, number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	require.Len(t, box.messages, 1, "only a number of the same app (same secret) takes the change")
	require.Equal(t, sibling.ID, box.messages[0].Number.ID)
}

// A message Switchboard cannot represent is stored as an unsupported one
// naming its type, never dropped; a media id is one segment of the media
// URL, whatever it holds (found by FuzzWebhook).
func TestInboundNeverDropsAMessage(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	post := func(message string) {
		body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp",` +
			`"metadata":{"phone_number_id":"` + pnid + `"},"messages":[` + message + `]}}]}]}`)
		require.NoError(t, in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	post(`{"from":"14155550111","id":"wamid.o1","type":"order","order":{"catalog_id":"1"}}`)
	post(`{"from":"14155550111","id":"wamid.u1","type":"unsupported","errors":[{"code":131051}]}`)
	post(`{"from":"14155550111","id":"wamid.e1","type":"text","text":{"body":"  "}}`)
	post(`{"from":"14155550111","id":"wamid.s1","type":"sticker","sticker":{}}`)
	post(`{"from":"14155550111","id":"wamid.r1","type":"reaction","reaction":{"message_id":"wamid.x","emoji":""}}`)
	post(`{"from":"14155550111","id":"wamid.n1"}`)
	post(`{"from":"14155550111","id":"wamid.d1","type":"document","document":{"id":"../../me?fields=id"}}`)

	require.Len(t, box.messages, 7, "every message is stored")
	texts := []string{}
	for i, m := range box.messages[:6] {
		if i == 4 {
			require.Equal(t, &channels.Reaction{TargetProviderID: "wamid.x"}, m.Reaction, "a reaction taken back is a reaction, not a message")
			continue
		}
		require.Equal(t, domain.KindText, m.Content.Kind)
		texts = append(texts, m.Content.Text)
	}
	require.Equal(t, []string{"[unsupported order message]", "[unsupported unsupported message]", "[unsupported text message]",
		"[unsupported sticker message]", "[unsupported unknown message]"}, texts)
	require.Equal(t, domain.Content{Kind: domain.KindDocument, MediaRef: "../../me?fields=id"}, box.messages[6].Content,
		"the media id is kept as the provider gave it; OpenMedia escapes it as one path segment")
}

func TestReadAndTypingRequests(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	ctx := context.Background()
	const wamid = "wamid.HBgLMTQxNTU1NTAxMTEVAgASGBQzQTFCMkMzRDRFNUY2RzdIOEk5SgA="
	in := messaging.Indication{Number: number, Settings: fake.Settings(appSecret, verify), ThreadID: "thr_x", ThreadType: domain.Individual,
		To: "+14155550111", Latest: domain.Message{ID: "msg_in", ProviderMessageID: wamid}}

	require.NoError(t, p.MarkRead(ctx, in))
	require.NoError(t, p.Typing(ctx, in))
	require.Equal(t, []map[string]any{
		{"messaging_product": "whatsapp", "status": "read", "message_id": wamid},
		{"messaging_product": "whatsapp", "status": "read", "message_id": wamid, "typing_indicator": map[string]any{"type": "text"}},
	}, fake.Statuses())
	require.Empty(t, fake.Sends(), "a read status is no message")
	caps := p.Indicators()
	require.True(t, caps.ReadReceipts)
	require.False(t, caps.Groups)
	require.True(t, caps.TypingMarksRead)
	require.Equal(t, 25*time.Second, caps.TypingWindow)

	fake.Fail(wamid, 131000)
	err := p.Typing(ctx, in)
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "provider_unavailable", pe.Code)
	require.False(t, pe.Permanent)
}

func TestFakeRefusesOtherStatusShapes(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	for name, body := range map[string]string{
		"unknown status":      `{"messaging_product":"whatsapp","status":"delivered","message_id":"wamid.X"}`,
		"no message id":       `{"messaging_product":"whatsapp","status":"read"}`,
		"typing of a kind":    `{"messaging_product":"whatsapp","status":"read","message_id":"wamid.X","typing_indicator":{"type":"audio"}}`,
		"typing as a flag":    `{"messaging_product":"whatsapp","status":"read","message_id":"wamid.X","typing_indicator":true}`,
		"a recipient as well": `{"messaging_product":"whatsapp","status":"read","message_id":"wamid.X","to":"14155550111"}`,
		"no product":          `{"status":"read","message_id":"wamid.X"}`,
	} {
		req, err := http.NewRequest(http.MethodPost, fake.URL+"/"+whatsappfake.Version+"/"+pnid+"/messages", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer EAAtoken")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e struct {
			Error whatsapp.GraphError `json:"error"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
		require.Equal(t, 100, e.Error.Code, name)
	}
	require.Empty(t, fake.Statuses())
}

// A user's edit (type edit, the Business app's coexistence numbers) and
// deletion for everyone (type revoke) are changes of the message they
// name, never messages of their own; an edit whose message has no text or
// media, or a revoke naming no message, is stored as unsupported.
func TestInboundEditsAndRevokes(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	post := func(body []byte) {
		require.NoError(t, in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	post(whatsappfake.EditText(pnid, display, "14155550111", "Sheena Nelson", "wamid.e1", "wamid.orig1", "see you at 6"))
	post(whatsappfake.Revoke(pnid, display, "14155550111", "Sheena Nelson", "wamid.r1", "wamid.orig2"))
	// The syntax of Meta's edit reference: an image whose caption changed,
	// quoting a message.
	post([]byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{` +
		`"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"` + pnid + `"},` +
		`"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"14155550111"}],"messages":[{"from":"14155550111",` +
		`"id":"wamid.e2","timestamp":"1739321024","type":"edit","edit":{"original_message_id":"wamid.orig3","message":{` +
		`"context":{"id":"wamid.ctx"},"type":"image","image":{"caption":"new caption","mime_type":"image/jpeg",` +
		`"sha256":"x","id":"m-img","url":"https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1"}}}}]},"field":"messages"}]}]}`))
	post(whatsappfake.MediaMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.e3", "edit",
		map[string]any{"original_message_id": "wamid.orig4", "message": map[string]any{"type": "poll_update"}}))
	post(whatsappfake.MediaMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.r2", "revoke", map[string]any{}))

	require.Len(t, box.messages, 5)
	edit, revoke, caption, odd, emptyRevoke := box.messages[0], box.messages[1], box.messages[2], box.messages[3], box.messages[4]
	require.Equal(t, &channels.Change{TargetProviderID: "wamid.orig1", At: time.Unix(1763800050, 0).UTC()}, edit.Change)
	require.Equal(t, domain.Content{Kind: domain.KindText, Text: "see you at 6"}, edit.Content)
	require.Equal(t, &channels.Change{TargetProviderID: "wamid.orig2", Deleted: true, At: time.Unix(1763800100, 0).UTC()}, revoke.Change)
	require.Equal(t, "+14155550111", revoke.Sender.ChatID)
	require.Equal(t, &channels.Change{TargetProviderID: "wamid.orig3", At: time.Unix(1739321024, 0).UTC()}, caption.Change)
	require.Equal(t, domain.Content{Kind: domain.KindImage, MediaRef: "m-img", MimeType: "image/jpeg", Caption: "new caption"}, caption.Content)
	require.Empty(t, caption.ReplyTo, "an edit quotes nothing of its own")
	require.Nil(t, odd.Change)
	require.Equal(t, "[unsupported edit message]", odd.Content.Text)
	require.Nil(t, emptyRevoke.Change)
	require.Equal(t, "[unsupported revoke message]", emptyRevoke.Content.Text)
}
