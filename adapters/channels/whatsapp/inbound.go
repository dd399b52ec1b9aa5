package whatsapp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Inbox is what inbound webhooks are handed to.
type Inbox interface {
	Number(ctx context.Context, p account.Provider, numberID string) (account.Number, map[string]string, error)
	Receive(ctx context.Context, in channels.Inbound) error
	Status(ctx context.Context, n account.Number, st channels.StatusReport) error
	GroupReported(ctx context.Context, n account.Number, u channels.GroupUpdate) error
}

// Siblings finds the other Cloud API numbers, for webhooks that carry
// events of several numbers of one app.
type Siblings interface {
	Numbers(ctx context.Context, p account.Provider) ([]account.Number, error)
	NumberSettings(n account.Number) (map[string]string, error)
}

// Inbound takes the Cloud API webhook.
type Inbound struct {
	Inbox    Inbox
	Siblings Siblings
	// Client, when set, reads what a group webhook leaves out (an invite
	// link).
	Client *Client
}

// Verify answers the subscription handshake: when the mode is subscribe
// and the verify token matches (in constant time) it returns the challenge
// to echo; anything else is Forbidden.
func (in *Inbound) Verify(ctx context.Context, numberID, mode, token, challenge string) (string, error) {
	_, settings, err := in.Inbox.Number(ctx, Name, numberID)
	if err != nil {
		return "", err
	}
	want := settings[SettingVerifyToken]
	if mode != "subscribe" || want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return "", failure.Forbidden("verification_failed", "hub.mode must be subscribe and hub.verify_token the number's verify token")
	}
	return challenge, nil
}

// ValidSignature checks an X-Hub-Signature-256 header ("sha256=" and the
// hex HMAC-SHA256 of the raw body with the app secret) in constant time.
func ValidSignature(header string, body []byte, appSecret string) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || appSecret == "" {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// Payload is a webhook body, as much of it as Switchboard reads.
type Payload struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value Value  `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// Value is the messages field of a change.
type Value struct {
	MessagingProduct string `json:"messaging_product"`
	Metadata         struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []Contact      `json:"contacts"`
	Messages []Message      `json:"messages"`
	Statuses []StatusUpdate `json:"statuses"`
	// Groups are the entries of a group webhook (see groupField).
	Groups []GroupEvent `json:"groups"`
}

// Contact is who sent the messages of a change: their phone number
// (wa_id, which the Cloud API leaves out for a user who adopted a
// username), business-scoped user id (user_id) and, in profile, their
// name and username.
type Contact struct {
	Profile struct {
		Name     string `json:"name"`
		Username string `json:"username"`
	} `json:"profile"`
	WaID   string `json:"wa_id"`
	UserID string `json:"user_id"`
}

// Media is an inbound media object: an image, video, audio (a voice note
// when Voice is set), document or sticker.
type Media struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
	Voice    bool   `json:"voice"`
	Animated bool   `json:"animated"`
}

// Message is an inbound message. From (the user's phone number) may be
// missing for a user who adopted a username; FromUserID is their
// business-scoped user id.
type Message struct {
	From       string `json:"from"`
	FromUserID string `json:"from_user_id"`
	// GroupID is set on a message in a group of the Groups API.
	GroupID   string `json:"group_id"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Text      *struct {
		Body string `json:"body"`
	} `json:"text"`
	Image    *Media `json:"image"`
	Video    *Media `json:"video"`
	Audio    *Media `json:"audio"`
	Document *Media `json:"document"`
	Sticker  *Media `json:"sticker"`
	Location *struct {
		Latitude  float64 `json:"latitude"`
		Longitude float64 `json:"longitude"`
		Name      string  `json:"name"`
		Address   string  `json:"address"`
	} `json:"location"`
	Button *struct {
		Text string `json:"text"`
	} `json:"button"`
	Interactive *struct {
		Type        string `json:"type"`
		ButtonReply *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"button_reply"`
		ListReply *struct {
			Title string `json:"title"`
		} `json:"list_reply"`
	} `json:"interactive"`
	Reaction *struct {
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
	} `json:"reaction"`
	// Revoke is set on a message of type revoke: the user deleted the
	// message it names for everyone.
	Revoke *struct {
		OriginalMessageID string `json:"original_message_id"`
	} `json:"revoke"`
	// Edit is set on a message of type edit: the user edited the message
	// it names, which is now Message (its text, or media with a caption).
	Edit *Edit `json:"edit"`
	// System is a notice about the user (type system): they changed
	// their phone number (user_changed_number; WaID is the new number)
	// or their business-scoped user id changed (user_changed_user_id);
	// UserID is the new user id, PreviousUserID the old one.
	System *System `json:"system"`
	// Context is set on a message that quotes another (a reply): the
	// quoted message's id and sender; the Cloud API sends no quoted text.
	Context *struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context"`
}

// Edit is a user's edit of the message OriginalMessageID.
type Edit struct {
	OriginalMessageID string  `json:"original_message_id"`
	Message           Message `json:"message"`
}

// System is the system object of a system message.
type System struct {
	Body           string `json:"body"`
	Type           string `json:"type"`
	WaID           string `json:"wa_id"`
	UserID         string `json:"user_id"`
	PreviousUserID string `json:"previous_user_id"`
}

// StatusUpdate is a delivery status of a message the number sent.
type StatusUpdate struct {
	ID          string         `json:"id"`
	Status      string         `json:"status"`
	Timestamp   string         `json:"timestamp"`
	RecipientID string         `json:"recipient_id"`
	Errors      []WebhookError `json:"errors"`
}

// Verified is a webhook post whose signature verified with its number's
// app secret.
type Verified struct {
	in       *Inbound
	number   account.Number
	settings map[string]string
	body     []byte
}

// Authenticate checks a POST's X-Hub-Signature-256 with the number's app
// secret, in constant time, before the body is parsed; Deliver stores what
// it carries.
func (in *Inbound) Authenticate(ctx context.Context, numberID, signature string, body []byte) (*Verified, error) {
	n, settings, err := in.Inbox.Number(ctx, Name, numberID)
	if err != nil {
		return nil, err
	}
	if !ValidSignature(signature, body, settings[SettingAppSecret]) {
		return nil, failure.Unauthenticated()
	}
	return &Verified{in: in, number: n, settings: settings, body: body}, nil
}

// Deliver parses the verified notification and stores the messages and
// statuses it carries.
func (v *Verified) Deliver(ctx context.Context) error {
	var p Payload
	if err := json.Unmarshal(v.body, &p); err != nil {
		return failure.Invalid(failure.Field("json_invalid", "the body is not a WhatsApp webhook payload", "body"))
	}
	for _, e := range p.Entry {
		for _, ch := range e.Changes {
			if ch.Field != "messages" && !groupField(ch.Field) {
				continue
			}
			target, settings, ok := v.in.numberFor(ctx, v.number, v.settings, ch.Value.Metadata.PhoneNumberID)
			if !ok {
				continue
			}
			handle := v.in.handle
			if groupField(ch.Field) {
				handle = func(ctx context.Context, n account.Number, value Value) error {
					return v.in.handleGroups(ctx, n, settings, value)
				}
			}
			if err := handle(ctx, target, ch.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// Webhook handles one POST: Authenticate, then Deliver.
func (in *Inbound) Webhook(ctx context.Context, numberID, signature string, body []byte) error {
	v, err := in.Authenticate(ctx, numberID, signature, body)
	if err != nil {
		return err
	}
	return v.Deliver(ctx)
}

// numberFor finds the number a change is about: the webhook's own, or
// another Cloud API number signed for by the same app secret (one Meta
// app has one callback URL for all its numbers).
func (in *Inbound) numberFor(ctx context.Context, n account.Number, settings map[string]string, phoneNumberID string) (account.Number, map[string]string, bool) {
	if phoneNumberID == settings[SettingPhoneNumberID] {
		return n, settings, true
	}
	if in.Siblings == nil || phoneNumberID == "" {
		return account.Number{}, nil, false
	}
	numbers, err := in.Siblings.Numbers(ctx, Name)
	if err != nil {
		return account.Number{}, nil, false
	}
	for _, other := range numbers {
		if other.ID == n.ID {
			continue
		}
		s, err := in.Siblings.NumberSettings(other)
		if err != nil || s[SettingPhoneNumberID] != phoneNumberID {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(s[SettingAppSecret]), []byte(settings[SettingAppSecret])) == 1 {
			return other, s, true
		}
	}
	return account.Number{}, nil, false
}

func (in *Inbound) handle(ctx context.Context, n account.Number, v Value) error {
	for _, m := range v.Messages {
		if m.ID == "" {
			continue
		}
		report := channels.Inbound{Number: n, Sender: sender(m, v.Contacts), ProviderMessageID: m.ID, SentAt: unixTime(m.Timestamp), GroupChatID: m.GroupID}
		if m.System != nil {
			report.IdentityChange = identityChange(m, report.Sender)
		}
		switch {
		case m.Reaction != nil:
			// A reaction (an empty emoji takes it back) is about the
			// message it names, never a message of its own.
			report.Reaction = &channels.Reaction{TargetProviderID: m.Reaction.MessageID, Emoji: m.Reaction.Emoji}
		case m.Revoke != nil && m.Revoke.OriginalMessageID != "":
			// The user deleted a message for everyone.
			report.Change = &channels.Change{TargetProviderID: m.Revoke.OriginalMessageID, Deleted: true, At: unixTime(m.Timestamp)}
		case m.Edit != nil && m.Edit.OriginalMessageID != "" && editable(m.Edit.Message):
			report.Content = content(m.Edit.Message)
			report.Change = &channels.Change{TargetProviderID: m.Edit.OriginalMessageID, At: unixTime(m.Timestamp)}
		default:
			report.Content = content(m)
		}
		if m.Context != nil && m.Context.ID != "" && report.Change == nil {
			report.ReplyTo = domain.Reply{ProviderMessageID: m.Context.ID}
		}
		err := in.Inbox.Receive(ctx, report)
		if err != nil {
			return err
		}
	}
	for _, st := range v.Statuses {
		report, ok := statusReport(st)
		if !ok {
			continue
		}
		if err := in.Inbox.Status(ctx, n, report); err != nil {
			return err
		}
	}
	return nil
}

// editable tells whether an edit's message has what a user edits: a text,
// or media (whose caption is edited). Another edit is stored as an
// unsupported message.
func editable(m Message) bool {
	return m.Text != nil || m.Image != nil || m.Video != nil || m.Audio != nil || m.Document != nil
}

// unixTime is a Cloud API timestamp (Unix seconds); zero when it is not.
func unixTime(s string) time.Time {
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// sender is who wrote m: the user the change's contacts describe with
// the same phone number or user id (or the only one). A message with
// neither from nor from_user_id is from the unknown sender, kept all the
// same.
func sender(m Message, contacts []Contact) channels.Sender {
	var c Contact
	for _, k := range contacts {
		if (m.From != "" && k.WaID == m.From) || (m.FromUserID != "" && k.UserID == m.FromUserID) || len(contacts) == 1 {
			c = k
			break
		}
	}
	s := channels.Sender{Name: c.Profile.Name, Username: strings.TrimPrefix(c.Profile.Username, "@"), UserID: firstNonEmpty(m.FromUserID, c.UserID)}
	if !domain.ValidWhatsAppUserID(s.UserID) {
		s.UserID = ""
	}
	if phone := firstNonEmpty(m.From, c.WaID); phone != "" {
		s.Phone = "+" + phone
	}
	switch {
	case s.Phone != "":
		s.ChatID = s.Phone
	case s.UserID != "":
		s.ChatID = s.UserID
	default:
		s.ChatID = domain.UnknownSender
	}
	return s
}

// identityChange is what a system message says about the user: their
// new phone number or user id.
func identityChange(m Message, s channels.Sender) *channels.IdentityChange {
	c := &channels.IdentityChange{Type: m.System.Type, PreviousUserID: m.System.PreviousUserID, UserID: m.System.UserID}
	if m.System.WaID != "" {
		c.Phone = "+" + m.System.WaID
	}
	if !domain.ValidWhatsAppUserID(c.UserID) {
		c.UserID = ""
	}
	if c.PreviousUserID == "" {
		c.PreviousUserID = s.UserID
	}
	return c
}

// statusReport maps a status update; false for statuses Switchboard does
// not track (deleted, warning).
func statusReport(st StatusUpdate) (channels.StatusReport, bool) {
	r := channels.StatusReport{ProviderMessageID: st.ID}
	switch st.Status {
	case "sent":
		r.Status = domain.Sent
	case "delivered":
		r.Status = domain.Delivered
	case "read":
		r.Status = domain.Read
	case "failed":
		r.Status, r.Code, r.Text = domain.Failed, "delivery_failed", "WhatsApp reported the message failed"
		if len(st.Errors) > 0 {
			e := st.Errors[0]
			pe := MapError(&GraphError{Code: e.Code, Message: firstNonEmpty(e.Title, e.Message)}, 400, "")
			pe.Message = firstNonEmpty(e.ErrorData.Details, e.Message, e.Title)
			r.Code, r.Text = pe.Code, pe.Message
		}
	default:
		return r, false
	}
	return r, st.ID != ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// content is what a message carries. Media arrive as the media object's
// id, which the number's access token opens (Provider.OpenMedia). A
// message of a type Switchboard does not read, or without the content
// its type promises, is unsupported: it is stored and delivered all the
// same.
func content(m Message) domain.Content {
	text := func(s string) domain.Content {
		if strings.TrimSpace(s) == "" {
			return unsupported(m)
		}
		return domain.Content{Kind: domain.KindText, Text: s}
	}
	media := func(kind domain.Kind, md *Media) domain.Content {
		if md.ID == "" || md.ID == "." || md.ID == ".." {
			return unsupported(m) // no media object, or not one path segment
		}
		c := domain.Content{Kind: kind, MediaRef: md.ID, MimeType: md.MimeType, FileName: md.Filename, Caption: md.Caption}
		switch {
		case m.Sticker == md:
			c.Variant = domain.VariantSticker
		case md.Voice:
			c.Variant = domain.VariantVoice
		}
		return c
	}
	switch {
	case m.System != nil && strings.TrimSpace(m.System.Body) != "":
		return domain.Content{Kind: domain.KindSystem, Text: m.System.Body}
	case m.System != nil:
		return domain.Content{Kind: domain.KindSystem, Text: "[" + firstNonEmpty(m.System.Type, "system") + "]"}
	case m.Text != nil:
		return text(m.Text.Body)
	case m.Image != nil:
		return media(domain.KindImage, m.Image)
	case m.Video != nil:
		return media(domain.KindVideo, m.Video)
	case m.Audio != nil:
		return media(domain.KindAudio, m.Audio)
	case m.Document != nil:
		return media(domain.KindDocument, m.Document)
	case m.Sticker != nil:
		return media(domain.KindImage, m.Sticker)
	case m.Location != nil:
		return domain.Content{Kind: domain.KindLocation, Latitude: m.Location.Latitude, Longitude: m.Location.Longitude,
			PlaceName: m.Location.Name, Address: m.Location.Address}
	case m.Button != nil:
		return text(m.Button.Text)
	case m.Interactive != nil && m.Interactive.ButtonReply != nil && m.Interactive.ButtonReply.ID != "":
		// A press of a reply button; context.id names the message it
		// was on.
		return domain.Content{Kind: domain.KindButtonReply, ButtonID: m.Interactive.ButtonReply.ID, Text: m.Interactive.ButtonReply.Title}
	case m.Interactive != nil && m.Interactive.ButtonReply != nil:
		return text(m.Interactive.ButtonReply.Title)
	case m.Interactive != nil && m.Interactive.ListReply != nil:
		return text(m.Interactive.ListReply.Title)
	}
	return unsupported(m)
}

// unsupported is the content of a message Switchboard cannot represent:
// a text naming its type.
func unsupported(m Message) domain.Content {
	typ := m.Type
	if strings.TrimSpace(typ) == "" {
		typ = "unknown"
	}
	return domain.Content{Kind: domain.KindText, Text: "[unsupported " + typ + " message]"}
}
