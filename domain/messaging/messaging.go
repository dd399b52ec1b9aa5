// Package messaging is the model of conversations: threads between an
// agent number and users (or a group), the messages in them, their
// content, and the rules about who may send what, where, and how a
// message's status may move.
package messaging

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// ThreadType says whether a thread is a one-to-one chat or a group.
type ThreadType string

// The thread types.
const (
	Individual ThreadType = "individual"
	Group      ThreadType = "group"
)

// Direction says who sent a message.
type Direction string

// The directions, as the interface names them.
const (
	Inbound     Direction = "inbound"
	OutboundAPI Direction = "outbound-api"
)

// Status is where a message is in its life.
type Status string

// The statuses. Outbound: queued → sent → delivered → read, any → failed.
// Inbound messages are received.
const (
	Queued    Status = "queued"
	Sent      Status = "sent"
	Delivered Status = "delivered"
	Read      Status = "read"
	Failed    Status = "failed"
	Received  Status = "received"
)

// rank orders outbound statuses, so that late or repeated provider reports
// never move a message backwards.
var rank = map[Status]int{Queued: 0, Sent: 1, Delivered: 2, Read: 3}

// CanMove reports whether a message in status from may move to status to.
// Failed and read are final; reports that arrive out of order are ignored
// rather than moving a message back.
func CanMove(from, to Status) bool {
	if from == Failed || from == Received || from == to {
		return false
	}
	if to == Failed {
		return from != Read
	}
	rf, okf := rank[from]
	rt, okt := rank[to]
	return okf && okt && rt > rf
}

// Kind is what a message carries.
type Kind string

// The content kinds.
const (
	KindText     Kind = "text"
	KindImage    Kind = "image"
	KindVideo    Kind = "video"
	KindAudio    Kind = "audio"
	KindDocument Kind = "document"
	KindLocation Kind = "location"
	// KindButtonReply is a user's press of a reply button of the agent's
	// message: Content.ButtonID names the button, Content.Text is its
	// title, and the message's ReplyTo is the message the button was on.
	KindButtonReply Kind = "button_reply"
	// KindSystem is a notice the provider sent about the user (a WhatsApp
	// user_changed_number or user_changed_user_id system message):
	// Content.Text is its text. Users write it never; sends refuse it.
	KindSystem Kind = "system"
)

// MediaKinds are the media_type values the interface accepts.
var MediaKinds = []Kind{KindImage, KindVideo, KindAudio, KindDocument}

// IsMedia reports whether k is one of the media kinds.
func (k Kind) IsMedia() bool {
	switch k {
	case KindImage, KindVideo, KindAudio, KindDocument:
		return true
	}
	return false
}

// MaxMediaBytes is the size limit per media kind (image 5 MB, video and
// audio 16 MB, documents 100 MB), enforced on the declared length and on
// the bytes actually read.
func MaxMediaBytes(k Kind) int64 {
	switch k {
	case KindImage:
		return 5 << 20
	case KindVideo, KindAudio:
		return 16 << 20
	case KindDocument:
		return 100 << 20
	}
	return 0
}

// MaxTextLength bounds message text (WhatsApp's limit is 4096 characters,
// Telegram's 4096; captions 1024).
const (
	MaxTextLength    = 4096
	MaxCaptionLength = 1024
)

// Content is what a message carries: text, a media file with an optional
// caption, or a location.
type Content struct {
	Kind Kind
	Text string
	// MediaURL, Caption: media kinds. MediaURL is where the file is
	// fetched: the sender's URL for a send; for media a user sent, a
	// signed link to Switchboard that reads fill in (it is never stored).
	MediaURL string
	Caption  string
	// MediaRef, MimeType, FileName, Size, Variant: media a user sent,
	// kept at the provider. MediaRef is the provider's reference to the
	// file (a WhatsApp media id, a Telegram file_id), opened with the
	// number's credentials; the provider's own URL is never kept.
	// MimeType, FileName and Size are empty or 0 where the provider does
	// not say.
	MediaRef string
	MimeType string
	FileName string
	Size     int64
	Variant  MediaVariant
	// Latitude, Longitude, PlaceName, Address: location.
	Latitude  float64
	Longitude float64
	PlaceName string
	Address   string
	// Buttons are the reply buttons a text message of the agent offers
	// (WhatsApp interactive reply buttons, a Telegram inline keyboard).
	Buttons []Button
	// ButtonID is the id of the button a user pressed (KindButtonReply).
	ButtonID string
	// Template is the template a KindTemplate message sends, with its
	// parameters; Text is its body as the user reads it.
	Template *TemplateSend
}

// MediaVariant tells apart the media a user sent that share a kind: a
// voice note is audio, a sticker is an image.
type MediaVariant string

// The media variants; the empty variant is a plain file of its kind.
const (
	VariantVoice   MediaVariant = "voice"
	VariantSticker MediaVariant = "sticker"
)

// KeptByProvider reports whether c is media a user sent that the
// provider keeps, opened through Switchboard's media link.
func (c Content) KeptByProvider() bool { return c.Kind.IsMedia() && c.MediaRef != "" }

// Summary is the plain text of a message: its text, caption, or place.
func (c Content) Summary() string {
	switch {
	case c.Kind == KindText, c.Kind == KindButtonReply, c.Kind == KindSystem, c.Kind == KindTemplate:
		return c.Text
	case c.Kind.IsMedia():
		return c.Caption
	case c.Kind == KindLocation:
		if c.PlaceName != "" {
			return c.PlaceName
		}
		return fmt.Sprintf("%.6f,%.6f", c.Latitude, c.Longitude)
	}
	return ""
}

// Fields says where each part of a content came from in a request, so
// that errors name the field the client actually sent.
type Fields struct {
	// Base prefixes every name (["content"] for a content object).
	Base []any
	// Text names the text field ("content", "message", "text").
	Text string
	// MediaURL names the URL field ("media_url", "attachment_uri").
	MediaURL string
}

// DefaultFields are the names of the per-type send bodies.
var DefaultFields = Fields{Text: "content", MediaURL: "media_url"}

// Path is the location of a field.
func (f Fields) Path(name string) []any {
	return append(append([]any{}, f.Base...), name)
}

func (f Fields) withDefaults() Fields {
	if f.Text == "" {
		f.Text = DefaultFields.Text
	}
	if f.MediaURL == "" {
		f.MediaURL = DefaultFields.MediaURL
	}
	return f
}

// URLField is the location of the media URL.
func (f Fields) URLField() []any { return f.withDefaults().Path(f.withDefaults().MediaURL) }

// Check validates content, naming fields as f says.
func (c Content) Check(f Fields) error {
	f = f.withDefaults()
	var p failure.Problems
	switch {
	case c.Kind == KindText:
		switch {
		case strings.TrimSpace(c.Text) == "":
			p.Add("string_too_short", "message text must not be empty", f.Path(f.Text)...)
		case utf8.RuneCountInString(c.Text) > MaxTextLength:
			p.Add("string_too_long", fmt.Sprintf("message text must be at most %d characters", MaxTextLength), f.Path(f.Text)...)
		}
	case c.Kind.IsMedia():
		if c.MediaRef != "" && c.MediaURL != "" {
			p.Add("extra_forbidden", "media kept by the provider has no URL of its own", f.Path(f.MediaURL)...)
		} else if err := CheckMediaURL(c.MediaURL); c.MediaRef == "" && err != nil {
			p.Add("url_parsing", err.Error(), f.Path(f.MediaURL)...)
		}
		if utf8.RuneCountInString(c.Caption) > MaxCaptionLength {
			p.Add("string_too_long", fmt.Sprintf("caption must be at most %d characters", MaxCaptionLength), f.Path("caption")...)
		}
	case c.Kind == KindLocation:
		if math.IsNaN(c.Latitude) || c.Latitude < -90 || c.Latitude > 90 {
			p.Add("value_error", "latitude must be between -90 and 90", f.Path("latitude")...)
		}
		if math.IsNaN(c.Longitude) || c.Longitude < -180 || c.Longitude > 180 {
			p.Add("value_error", "longitude must be between -180 and 180", f.Path("longitude")...)
		}
	case c.Kind == KindButtonReply:
		switch {
		case c.ButtonID == "":
			p.Add("missing", "Field required", f.Path("button_id")...)
		case len(c.ButtonID) > MaxButtonIDBytes:
			p.Add("string_too_long", fmt.Sprintf("button_id must be at most %d bytes", MaxButtonIDBytes), f.Path("button_id")...)
		}
		if utf8.RuneCountInString(c.Text) > MaxTextLength {
			p.Add("string_too_long", fmt.Sprintf("the button title must be at most %d characters", MaxTextLength), f.Path("button_title")...)
		}
	case c.Kind == KindTemplate:
		if c.Template == nil {
			p.Add("missing", "Field required", f.Path("template")...)
		}
	default:
		p.Add("enum", "media_type must be one of image, video, audio, document", f.Path("media_type")...)
	}
	if len(c.Buttons) > 0 && c.Kind != KindText {
		p.Add("value_error", "buttons go with a text message only (no media, location or button reply)", "buttons")
	}
	return p.Err()
}

// CheckMediaURL checks the form of a media URL; whether its host is public
// is the HTTP guard's business.
func CheckMediaURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("the media URL is required")
	}
	if len(raw) > 2048 {
		return fmt.Errorf("the media URL must be at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("the media URL must be an absolute http(s) URL")
	}
	return nil
}

// telegramChat is a Telegram chat id (negative for groups) or @username.
var telegramChat = regexp.MustCompile(`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$`)

// whatsAppUserID is a WhatsApp business-scoped user id (BSUID): an ISO
// 3166 alpha-2 country code, a period and up to 128 alphanumeric
// characters (US.13491208655302741918), or a parent BSUID with ENT
// between them (US.ENT.11815799212886844830).
var whatsAppUserID = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)

// ValidWhatsAppUserID reports whether s is a WhatsApp business-scoped
// user id.
func ValidWhatsAppUserID(s string) bool { return whatsAppUserID.MatchString(s) }

// UnknownSender is the address of a user a provider reported without any
// id (a WhatsApp message with neither from nor from_user_id): the message
// is kept, in one thread per agent number, and cannot be answered.
const UnknownSender = "unknown"

// ValidRecipient reports whether to can address a user on service:
// E.164 or a business-scoped user id on WhatsApp; E.164, a chat id or an
// @username on Telegram.
func ValidRecipient(service account.Service, to string) bool {
	if account.ValidE164(to) {
		return true
	}
	if service == account.WhatsApp {
		return ValidWhatsAppUserID(to)
	}
	return service == account.Telegram && telegramChat.MatchString(to)
}

// Thread is a conversation: an agent number with one user, or a group.
type Thread struct {
	ID        string
	AccountID string
	Service   account.Service
	Type      ThreadType
	// AgentNumber is the account's number in the thread (for a group, the
	// number that joined it).
	AgentNumber string
	// Contact is the user of an individual thread.
	Contact string
	// ContactID is the contact (the person) of that user.
	ContactID string
	Name      string
	// LastInboundAt is when the user last wrote; an individual thread
	// accepts sends only once the user has written.
	LastInboundAt *time.Time
	// WindowClosesAt is when the provider's customer service window of an
	// individual thread closes (WhatsApp Cloud API: 24 hours after the
	// provider's time of the user's last message); after it only template
	// messages may be sent. Nil for threads whose provider has no window.
	WindowClosesAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// HasWindow reports whether t's provider limits free-form sends to a
// customer service window.
func (t Thread) HasWindow() bool { return t.WindowClosesAt != nil }

// WindowOpen reports whether t accepts free-form messages at now: it has
// no window, or its window has not closed yet.
func (t Thread) WindowOpen(now time.Time) bool {
	return t.WindowClosesAt == nil || now.Before(*t.WindowClosesAt)
}

// CheckWindow applies the customer service window to a free-form send at
// now: a thread whose window closed refuses it with WindowClosed.
// Template messages are not subject to it.
func (t Thread) CheckWindow(now time.Time) error {
	if t.WindowOpen(now) {
		return nil
	}
	return WindowClosed(*t.WindowClosesAt)
}

// WindowClosedCode is the code of the refusal of a free-form send after
// the customer service window closed.
const WindowClosedCode = "window_closed"

// WindowClosedAtDetail names the detail of that refusal that says when
// the window closed (RFC 3339, UTC).
const WindowClosedAtDetail = "window_closed_at"

// WindowClosed refuses a free-form send in a thread whose customer
// service window closed at closedAt: only a template may be sent until
// the user writes again.
func WindowClosed(closedAt time.Time) error {
	at := closedAt.UTC().Format(time.RFC3339)
	return &failure.Error{Kind: failure.KindConflict, Code: WindowClosedCode,
		Message: "the customer service window of this conversation closed at " + at +
			" (24 hours after the user's last message): only a template message may be sent until the user writes again",
		Details: map[string]string{WindowClosedAtDetail: at}}
}

// Participant is a member of a thread.
type Participant struct {
	Address string
	Name    string
	Admin   bool
	IsAgent bool
}

// Message is one message of a thread.
type Message struct {
	ID          string
	AccountID   string
	ThreadID    string
	Service     account.Service
	Direction   Direction
	From        string
	To          string
	SenderName  string
	Content     Content
	Status      Status
	FailureCode string
	FailureText string
	// ProviderMessageID is the channel's id, for status reports.
	ProviderMessageID string
	// ReplyTo is the message this one answers, if it quotes one.
	ReplyTo Reply
	// UserID and Username are the WhatsApp business-scoped user id and
	// username of the user who sent an inbound message, where the
	// provider showed them (From is their phone number where known).
	UserID   string
	Username string
	// ContactID is the contact (the person) of the thread's user.
	ContactID string
	// Reactions are the current reactions on this message, one per
	// reactor (filled by the reads that list them).
	Reactions []Reaction
	// EditedAt is when the user last edited the message (nil: never), and
	// PreviousText its text before that edit.
	EditedAt     *time.Time
	PreviousText string
	// DeletedAt is when the user deleted the message for everyone (nil:
	// not deleted); a deleted message keeps no content.
	DeletedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Deleted reports whether the user deleted m for everyone.
func (m Message) Deleted() bool { return m.DeletedAt != nil }

// EditableText is the part of c a user edits: the text of a text, the
// caption of media.
func (c Content) EditableText() string {
	if c.Kind.IsMedia() {
		return c.Caption
	}
	return c.Text
}

// WithEditedText is c with its editable text replaced by text.
func (c Content) WithEditedText(text string) Content {
	if c.Kind.IsMedia() {
		c.Caption = text
	} else {
		c.Kind, c.Text = KindText, text
	}
	return c
}

// Unread reports whether m is an inbound message the agent has not marked
// read. Inbound messages are received, and read once the agent marks their
// thread read; provider reports never move them (see CanMove).
func (m Message) Unread() bool { return m.Direction == Inbound && m.Status == Received }

// ErrNoInboundMessage refuses a read receipt or a typing indicator in a
// thread whose user never wrote: providers show them only in answer to a
// user's message.
var ErrNoInboundMessage = threadRefusal("no_inbound_message",
	"the thread has no message from a user yet: read receipts and typing answer a user's message")

// threadRefusal is a failure of kind Invalid about the thread a request
// names in its path: its code is also the field error's type.
func threadRefusal(code, message string) *failure.Error {
	return &failure.Error{Kind: failure.KindInvalid, Code: code, Message: message,
		Fields: []failure.FieldError{{In: "path", Path: []any{"threadId"}, Type: code, Message: message}}}
}

// GroupIndicationsNotSupported refuses a read receipt or typing indicator
// in a group thread of a provider that shows them only in one-to-one
// chats.
func GroupIndicationsNotSupported(provider account.Provider) error {
	return threadRefusal("not_supported_by_provider",
		fmt.Sprintf("the %s provider shows read receipts and typing only in one-to-one chats, and this is a group thread", provider))
}

// CheckIndication applies the precondition of read receipts and typing
// indicators: a user has written in the thread.
func CheckIndication(t Thread) error {
	if t.LastInboundAt == nil {
		return ErrNoInboundMessage
	}
	return nil
}

// Precondition failures of sending, with the codes clients rely on.
var (
	ErrConversationNotStarted = failure.Conflict("conversation_not_started",
		"the user has not started a conversation with this agent number on this service yet")
	ErrNotGroupMember = failure.Conflict("not_group_member", "the agent number is not a member of this group")
)

// NumberNotPermitted is the failure for a from number the account may not
// use on the service.
func NumberNotPermitted(number string, service account.Service) error {
	return failure.Forbidden("number_not_permitted",
		fmt.Sprintf("%s is not an enabled %s number of this account", number, service))
}

// CheckIndividualSend applies the individual-chat precondition: the user
// must have written to the agent number first.
func CheckIndividualSend(t *Thread) error {
	if t == nil || t.LastInboundAt == nil {
		return ErrConversationNotStarted
	}
	return nil
}

// CheckGroupSend applies the group precondition to a member list: the
// agent number is a current member (the rule GroupState.Actor applies).
func CheckGroupSend(agentNumber string, members []Participant) error {
	g := GroupState{Members: members}
	_, err := g.Actor(agentNumber)
	return err
}

// whatsappTypes are the media types the WhatsApp Cloud API accepts per
// kind; documents may be any common type.
var whatsappTypes = map[Kind][]string{
	KindImage: {"image/jpeg", "image/png"},
	KindVideo: {"video/mp4", "video/3gpp"},
	KindAudio: {"audio/aac", "audio/mp4", "audio/mpeg", "audio/amr", "audio/ogg"},
}

// telegramTypes are what the Bot API's sendPhoto, sendVideo and sendAudio
// accept by URL; sendDocument takes any file.
var telegramTypes = map[Kind][]string{
	KindImage: {"image/jpeg", "image/png", "image/gif", "image/webp"},
	KindVideo: {"video/mp4"},
	KindAudio: {"audio/mpeg", "audio/mp4", "audio/ogg", "audio/x-m4a"},
}

// AcceptsMediaType reports whether service accepts a file of contentType
// as kind. Parameters such as "; charset=" are ignored.
func AcceptsMediaType(service account.Service, kind Kind, contentType string) bool {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	if kind == KindDocument {
		return mt != "" && !strings.HasPrefix(mt, "text/html")
	}
	table := whatsappTypes
	if service == account.Telegram {
		table = telegramTypes
	}
	for _, t := range table[kind] {
		if t == mt {
			return true
		}
	}
	return false
}

// Reaction is an emoji that a user or the agent set on a message. An empty
// Emoji is a reaction taken back.
type Reaction struct {
	// MessageID is the message reacted to; empty when the provider named
	// a message Switchboard does not have (TargetProviderID names it).
	MessageID        string
	TargetProviderID string
	AccountID        string
	ThreadID         string
	Service          account.Service
	// Reactor is the address of who reacted (the user, or the agent
	// number); ReactorName is the user's name where the provider sends it.
	Reactor     string
	ReactorName string
	FromAgent   bool
	Emoji       string
	At          time.Time
}

// Removed reports whether r takes a reaction back.
func (r Reaction) Removed() bool { return r.Emoji == "" }

// Reply is what a message quotes: the message it answers. MessageID is
// empty when the provider named a message Switchboard does not have;
// ProviderMessageID is the provider's id for it, when known; Text is the
// quoted text, from the provider or from the stored message.
type Reply struct {
	MessageID         string
	ProviderMessageID string
	Text              string
}

// Quotes reports whether the reply names a message.
func (r Reply) Quotes() bool { return r.MessageID != "" || r.ProviderMessageID != "" }

// MaxQuotedTextLength bounds the quoted text kept with a reply.
const MaxQuotedTextLength = MaxTextLength

// ErrReplyToOtherThread refuses a reply_to naming a message of another
// thread of the account.
func ErrReplyToOtherThread(field ...any) error {
	return failure.Invalid(failure.Field("value_error", "reply_to must name a message of the same thread", field...))
}

// ErrNotOneEmoji refuses a reaction that is not a single emoji.
func ErrNotOneEmoji(field ...any) error {
	return failure.Invalid(failure.Field("value_error", "emoji must be exactly one emoji (one grapheme cluster with emoji presentation)", field...))
}
