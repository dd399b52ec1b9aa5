package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Update is one Bot API update, as much of it as Switchboard reads.
type Update struct {
	UpdateID int64    `json:"update_id"`
	Message  *Message `json:"message,omitempty"`
	// EditedMessage is a message as a user edited it (sent when
	// allowed_updates asks for edited_message).
	EditedMessage *Message           `json:"edited_message,omitempty"`
	MyChatMember  *ChatMemberUpdated `json:"my_chat_member,omitempty"`
	// MessageReaction is a user's change of their reactions on a message
	// (sent only when allowed_updates asks for message_reaction).
	MessageReaction *MessageReactionUpdated `json:"message_reaction,omitempty"`
	// CallbackQuery is a user's press of an inline keyboard button
	// (sent only when allowed_updates asks for callback_query).
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
}

// CallbackQuery is a press of an inline keyboard button: Data is the
// button's callback_data, Message the bot's message it was on (absent
// for a message too old to be shown, or of an inline query).
type CallbackQuery struct {
	ID           string   `json:"id"`
	From         User     `json:"from"`
	Message      *Message `json:"message,omitempty"`
	ChatInstance string   `json:"chat_instance"`
	Data         string   `json:"data,omitempty"`
}

// ReactionType is one reaction: an emoji, a custom emoji or a paid one.
type ReactionType struct {
	Type  string `json:"type"`
	Emoji string `json:"emoji,omitempty"`
}

// MessageReactionUpdated is a change of a user's reactions on a message.
type MessageReactionUpdated struct {
	Chat      Chat  `json:"chat"`
	MessageID int64 `json:"message_id"`
	// User is absent when an anonymous admin reacted; ActorChat is then
	// the chat on whose behalf.
	User        *User          `json:"user,omitempty"`
	ActorChat   *Chat          `json:"actor_chat,omitempty"`
	Date        int64          `json:"date"`
	OldReaction []ReactionType `json:"old_reaction"`
	NewReaction []ReactionType `json:"new_reaction"`
}

// Chat is a Telegram chat.
type Chat struct {
	ID       int64  `json:"id"`
	Type     string `json:"type"`
	Title    string `json:"title,omitempty"`
	Username string `json:"username,omitempty"`
}

// File is the part of a PhotoSize, Video, Audio, Voice, Document or
// Sticker Switchboard keeps.
type File struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id,omitempty"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// Sticker is a sticker: a WEBP image, an animated (TGS) or a video (WEBM)
// sticker.
type Sticker struct {
	File
	Emoji      string `json:"emoji,omitempty"`
	IsAnimated bool   `json:"is_animated,omitempty"`
	IsVideo    bool   `json:"is_video,omitempty"`
}

// MimeType is the sticker file's type, which the Bot API does not send.
func (s Sticker) MimeType() string {
	switch {
	case s.IsAnimated:
		return "application/x-tgsticker"
	case s.IsVideo:
		return "video/webm"
	}
	return "image/webp"
}

// Location is a point on the map.
type Location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// Message is an inbound message.
type Message struct {
	MessageID int64 `json:"message_id"`
	From      *User `json:"from,omitempty"`
	Chat      Chat  `json:"chat"`
	Date      int64 `json:"date"`
	// EditDate is when an edited message was last edited.
	EditDate int64     `json:"edit_date,omitempty"`
	Text     string    `json:"text,omitempty"`
	Caption  string    `json:"caption,omitempty"`
	Photo    []File    `json:"photo,omitempty"`
	Video    *File     `json:"video,omitempty"`
	Audio    *File     `json:"audio,omitempty"`
	Voice    *File     `json:"voice,omitempty"`
	Document *File     `json:"document,omitempty"`
	Sticker  *Sticker  `json:"sticker,omitempty"`
	Location *Location `json:"location,omitempty"`
	// ReplyToMessage is the message this one answers; Quote, the part
	// of it the user quoted.
	ReplyToMessage *Message `json:"reply_to_message,omitempty"`
	Quote          *struct {
		Text string `json:"text"`
	} `json:"quote,omitempty"`
	Venue *struct {
		Location Location `json:"location"`
		Title    string   `json:"title"`
		Address  string   `json:"address"`
	} `json:"venue,omitempty"`
	// ReplyMarkup is the inline keyboard of a bot's message (the message
	// of a callback query carries it).
	ReplyMarkup *struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data,omitempty"`
		} `json:"inline_keyboard"`
	} `json:"reply_markup,omitempty"`
	// MigrateToChatID is set on the service message of a group that
	// became a supergroup, with the chat id it has from now on.
	MigrateToChatID int64 `json:"migrate_to_chat_id,omitempty"`
	Contact         *struct {
		PhoneNumber string `json:"phone_number"`
		FirstName   string `json:"first_name"`
		LastName    string `json:"last_name,omitempty"`
		UserID      int64  `json:"user_id,omitempty"`
	} `json:"contact,omitempty"`
	// unread is the first field, in name order, that Switchboard does not
	// read and that is neither about the message nor a service message's:
	// content of a type it does not know (a poll, a dice, a video note).
	unread string
}

// UnmarshalJSON reads a message and notes its first unread field.
func (m *Message) UnmarshalJSON(b []byte) error {
	type fields Message
	if err := json.Unmarshal(b, (*fields)(m)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	names := make([]string, 0, len(all))
	for name := range all {
		// Names match case-insensitively, as encoding/json matches fields.
		if name != "" && !knownField[strings.ToLower(name)] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) > 0 {
		m.unread = names[0]
	}
	return nil
}

// knownField are the Bot API's fields of a message that are not content
// of a type Switchboard does not know: what it reads, what is about the
// message (sender, reply, formatting, forwarding), and the fields of
// service messages (members, titles, pins, topics, payments, calls).
var knownField = func() map[string]bool {
	known := map[string]bool{}
	for _, f := range strings.Fields(`
		message_id message_thread_id from sender_chat sender_boost_count sender_business_bot date business_connection_id chat
		forward_origin forward_from forward_from_chat forward_from_message_id forward_signature forward_sender_name forward_date
		is_topic_message is_automatic_forward reply_to_message external_reply quote reply_to_story via_bot edit_date
		has_protected_content is_from_offline is_paid_post media_group_id author_signature paid_star_count entities
		link_preview_options effect_id caption_entities show_caption_above_media has_media_spoiler reply_markup
		text caption photo video audio voice document sticker location venue contact
		new_chat_members left_chat_member new_chat_title new_chat_photo delete_chat_photo group_chat_created
		supergroup_chat_created channel_chat_created message_auto_delete_timer_changed migrate_to_chat_id
		migrate_from_chat_id pinned_message invoice successful_payment refunded_payment users_shared chat_shared gift
		unique_gift connected_website write_access_allowed passport_data proximity_alert_triggered boost_added
		chat_background_set checklist_tasks_done checklist_tasks_added direct_message_price_changed
		forum_topic_created forum_topic_edited forum_topic_closed forum_topic_reopened general_forum_topic_hidden
		general_forum_topic_unhidden giveaway_created giveaway_completed paid_message_price_changed
		video_chat_scheduled video_chat_started video_chat_ended video_chat_participants_invited web_app_data`) {
		known[f] = true
	}
	return known
}()

// ChatMemberUpdated reports a change of the bot's own membership.
type ChatMemberUpdated struct {
	Chat          Chat `json:"chat"`
	From          User `json:"from"`
	NewChatMember struct {
		Status string `json:"status"`
		User   User   `json:"user"`
	} `json:"new_chat_member"`
}

// Inbox is what inbound updates are handed to.
type Inbox interface {
	Number(ctx context.Context, p account.Provider, numberID string) (account.Number, map[string]string, error)
	Receive(ctx context.Context, in channels.Inbound) error
	LeftGroup(ctx context.Context, n account.Number, chat string) error
	JoinedGroup(ctx context.Context, n account.Number, chat, title string) error
	MovedGroup(ctx context.Context, n account.Number, from, to string) error
	MarkUpdate(ctx context.Context, n account.Number, key string) error
}

// Inbound takes updates from the webhook and the pollers.
type Inbound struct {
	Inbox Inbox
}

// Verified is a webhook post whose secret token matched its number's.
type Verified struct {
	in     *Inbound
	number account.Number
	body   []byte
}

// Authenticate checks a POST to a number's webhook: the secret token
// header must match (compared in constant time). The body is not looked
// at; Deliver stores what it carries.
func (in *Inbound) Authenticate(ctx context.Context, numberID, secretHeader string, body []byte) (*Verified, error) {
	n, settings, err := in.Inbox.Number(ctx, Name, numberID)
	if err != nil {
		return nil, err
	}
	want := WebhookSecret(n.ID, settings)
	if want == "" || subtle.ConstantTimeCompare([]byte(secretHeader), []byte(want)) != 1 {
		return nil, failure.Unauthenticated()
	}
	return &Verified{in: in, number: n, body: body}, nil
}

// Deliver parses the verified update and stores what it carries, once.
func (v *Verified) Deliver(ctx context.Context) error {
	var u Update
	if err := json.Unmarshal(v.body, &u); err != nil {
		return failure.Invalid(failure.Field("json_invalid", "the body is not a Telegram update", "body"))
	}
	return v.in.Handle(ctx, v.number, u)
}

// Webhook handles one POST to a number's webhook: Authenticate, then
// Deliver.
func (in *Inbound) Webhook(ctx context.Context, numberID, secretHeader string, body []byte) error {
	v, err := in.Authenticate(ctx, numberID, secretHeader, body)
	if err != nil {
		return err
	}
	return v.Deliver(ctx)
}

// updateKey is the dedupe key of an update.
func updateKey(id int64) string { return "tg-update:" + strconv.FormatInt(id, 10) }

// Handle stores what an update carries, once.
func (in *Inbound) Handle(ctx context.Context, n account.Number, u Update) error {
	key := updateKey(u.UpdateID)
	switch {
	case u.Message != nil && u.Message.MigrateToChatID != 0 && isGroup(u.Message.Chat.Type):
		from, to := strconv.FormatInt(u.Message.Chat.ID, 10), strconv.FormatInt(u.Message.MigrateToChatID, 10)
		if err := in.Inbox.MovedGroup(ctx, n, from, to); err != nil {
			return err
		}
	case u.MessageReaction != nil:
		r, ok := reaction(n, u.MessageReaction)
		if !ok {
			return in.Inbox.MarkUpdate(ctx, n, key)
		}
		r.UpdateKey = key
		return in.Inbox.Receive(ctx, r)
	case u.CallbackQuery != nil:
		press, ok := buttonPress(n, u.CallbackQuery)
		if !ok {
			return in.Inbox.MarkUpdate(ctx, n, key)
		}
		press.UpdateKey = key
		return in.Inbox.Receive(ctx, press)
	case u.EditedMessage != nil:
		msg, ok := edited(n, u.EditedMessage)
		if !ok {
			return in.Inbox.MarkUpdate(ctx, n, key)
		}
		msg.UpdateKey = key
		return in.Inbox.Receive(ctx, msg)
	case u.Message != nil:
		msg, ok := inbound(n, u.Message)
		if !ok {
			return in.Inbox.MarkUpdate(ctx, n, key)
		}
		msg.UpdateKey = key
		return in.Inbox.Receive(ctx, msg)
	case u.MyChatMember != nil && isGroup(u.MyChatMember.Chat.Type):
		chat := strconv.FormatInt(u.MyChatMember.Chat.ID, 10)
		var err error
		switch u.MyChatMember.NewChatMember.Status {
		case "left", "kicked":
			err = in.Inbox.LeftGroup(ctx, n, chat)
		case "member", "administrator", "creator", "restricted":
			err = in.Inbox.JoinedGroup(ctx, n, chat, u.MyChatMember.Chat.Title)
		}
		if err != nil {
			return err
		}
	}
	return in.Inbox.MarkUpdate(ctx, n, key)
}

func isGroup(t string) bool { return t == "group" || t == "supergroup" }

// inbound turns a message into what the inbox stores; false for messages
// it does not keep (channel posts, service messages, messages of bots).
func inbound(n account.Number, m *Message) (channels.Inbound, bool) {
	if m.From == nil || m.From.IsBot || (m.Chat.Type != "private" && !isGroup(m.Chat.Type)) {
		return channels.Inbound{}, false
	}
	content, ok := content(m)
	if !ok {
		return channels.Inbound{}, false
	}
	sender := channels.Sender{ChatID: strconv.FormatInt(m.From.ID, 10), Username: m.From.Username, Name: m.From.Name()}
	if c := m.Contact; c != nil && c.UserID == m.From.ID {
		// The user shared their own phone number with the bot.
		phone := c.PhoneNumber
		if !strings.HasPrefix(phone, "+") {
			phone = "+" + phone
		}
		if account.ValidE164(phone) {
			sender.Phone = phone
		}
	}
	out := channels.Inbound{
		Number: n, Sender: sender, Content: content,
		ProviderMessageID: MessageID(n.ID, m.Chat.ID, m.MessageID),
	}
	if isGroup(m.Chat.Type) {
		out.GroupChatID, out.GroupTitle = strconv.FormatInt(m.Chat.ID, 10), m.Chat.Title
	}
	if q := m.ReplyToMessage; q != nil {
		out.ReplyTo = domain.Reply{ProviderMessageID: MessageID(n.ID, q.Chat.ID, q.MessageID), Text: q.Text}
		if out.ReplyTo.Text == "" {
			out.ReplyTo.Text = q.Caption
		}
		if m.Quote != nil && m.Quote.Text != "" {
			out.ReplyTo.Text = m.Quote.Text
		}
	}
	return out, true
}

// buttonPress turns a callback query into what the inbox stores: a button
// reply on the bot's message it was pressed on, answered at Telegram once
// stored (Acknowledge). The pressed button's title is read from the
// message's keyboard when the update shows it, else from the stored
// message. Presses without a message or data (inline mode,
// games), of bots, or outside private chats and groups are not kept.
func buttonPress(n account.Number, q *CallbackQuery) (channels.Inbound, bool) {
	m := q.Message
	if q.ID == "" || q.Data == "" || q.From.IsBot || m == nil || (m.Chat.Type != "private" && !isGroup(m.Chat.Type)) {
		return channels.Inbound{}, false
	}
	out := channels.Inbound{
		Number:      n,
		Sender:      channels.Sender{ChatID: strconv.FormatInt(q.From.ID, 10), Username: q.From.Username, Name: q.From.Name()},
		Content:     domain.Content{Kind: domain.KindButtonReply, ButtonID: q.Data},
		ReplyTo:     domain.Reply{ProviderMessageID: MessageID(n.ID, m.Chat.ID, m.MessageID)},
		Acknowledge: true, ProviderMessageID: CallbackMessageID(n.ID, q.ID),
	}
	if isGroup(m.Chat.Type) {
		out.GroupChatID, out.GroupTitle = strconv.FormatInt(m.Chat.ID, 10), m.Chat.Title
	}
	if m.ReplyMarkup != nil {
		// The message shows its keyboard: the pressed button's title.
		for _, row := range m.ReplyMarkup.InlineKeyboard {
			for _, b := range row {
				if b.CallbackData == q.Data && out.Content.Text == "" {
					out.Content.Text = b.Text
				}
			}
		}
	}
	return out, true
}

// edited turns an edited message into the user's edit of the message it
// was: its new text, or its media's new caption, at its edit_date. Edits
// with no text to edit (a live location moving) and those inbound does
// not keep are not kept.
func edited(n account.Number, m *Message) (channels.Inbound, bool) {
	media := len(m.Photo) > 0 || m.Video != nil || m.Audio != nil || m.Voice != nil || m.Document != nil
	if m.Text == "" && !media {
		return channels.Inbound{}, false
	}
	out, ok := inbound(n, m)
	if !ok {
		return channels.Inbound{}, false
	}
	out.Change = &channels.Change{TargetProviderID: out.ProviderMessageID}
	if m.EditDate > 0 {
		out.Change.At = time.Unix(m.EditDate, 0).UTC()
	}
	out.ReplyTo = domain.Reply{}
	return out, true
}

// reaction turns a reaction change into what the inbox stores: the
// user's newest reaction on the message, or none (taken back) when
// new_reaction is empty. A reaction that is not an emoji (a custom or
// paid one) is kept as its type in brackets. Reactions outside private
// chats and groups, and of bots, are not kept.
func reaction(n account.Number, u *MessageReactionUpdated) (channels.Inbound, bool) {
	if u.Chat.Type != "private" && !isGroup(u.Chat.Type) {
		return channels.Inbound{}, false
	}
	var sender channels.Sender
	switch {
	case u.User != nil && !u.User.IsBot:
		sender = channels.Sender{ChatID: strconv.FormatInt(u.User.ID, 10), Username: u.User.Username, Name: u.User.Name()}
	case u.User == nil && u.ActorChat != nil:
		sender = channels.Sender{ChatID: strconv.FormatInt(u.ActorChat.ID, 10), Username: u.ActorChat.Username, Name: u.ActorChat.Title}
	default:
		return channels.Inbound{}, false
	}
	emoji := ""
	if len(u.NewReaction) > 0 {
		last := u.NewReaction[len(u.NewReaction)-1]
		emoji = last.Emoji
		if last.Type != "emoji" || emoji == "" {
			emoji = "[" + last.Type + "]"
		}
	}
	out := channels.Inbound{
		Number: n, Sender: sender,
		Reaction: &channels.Reaction{TargetProviderID: MessageID(n.ID, u.Chat.ID, u.MessageID), Emoji: emoji},
	}
	if isGroup(u.Chat.Type) {
		out.GroupChatID, out.GroupTitle = strconv.FormatInt(u.Chat.ID, 10), u.Chat.Title
	}
	return out, true
}

// content is what a message carries. Media arrive as the file's file_id,
// which the bot token opens (Provider.OpenMedia), with what the update
// says of the file.
func content(m *Message) (domain.Content, bool) {
	text := func(s string) (domain.Content, bool) {
		return domain.Content{Kind: domain.KindText, Text: s}, strings.TrimSpace(s) != ""
	}
	file := func(kind domain.Kind, f File, mimeType string, variant domain.MediaVariant) (domain.Content, bool) {
		if f.FileID == "" {
			return text("[unsupported " + string(kind) + " message]")
		}
		if f.MimeType != "" {
			mimeType = f.MimeType
		}
		return domain.Content{Kind: kind, MediaRef: f.FileID, MimeType: mimeType, FileName: f.FileName, Size: max(f.FileSize, 0),
			Caption: m.Caption, Variant: variant}, true
	}
	switch {
	case m.Text != "":
		return text(m.Text)
	case len(m.Photo) > 0:
		return file(domain.KindImage, m.Photo[len(m.Photo)-1], "image/jpeg", "") // the largest size; photos are JPEG
	case m.Video != nil:
		return file(domain.KindVideo, *m.Video, "", "")
	case m.Audio != nil:
		return file(domain.KindAudio, *m.Audio, "", "")
	case m.Voice != nil:
		return file(domain.KindAudio, *m.Voice, "audio/ogg", domain.VariantVoice)
	case m.Document != nil:
		return file(domain.KindDocument, *m.Document, "", "")
	case m.Venue != nil:
		return domain.Content{Kind: domain.KindLocation, Latitude: m.Venue.Location.Latitude, Longitude: m.Venue.Location.Longitude,
			PlaceName: m.Venue.Title, Address: m.Venue.Address}, true
	case m.Location != nil:
		return domain.Content{Kind: domain.KindLocation, Latitude: m.Location.Latitude, Longitude: m.Location.Longitude}, true
	case m.Contact != nil:
		return text(strings.TrimSpace(fmt.Sprintf("[contact %s %s %s]", m.Contact.FirstName, m.Contact.LastName, m.Contact.PhoneNumber)))
	case m.Sticker != nil && m.Sticker.FileID != "":
		return file(domain.KindImage, m.Sticker.File, m.Sticker.MimeType(), domain.VariantSticker)
	case m.Sticker != nil:
		return text(strings.TrimSpace("[sticker " + m.Sticker.Emoji + "]"))
	case m.unread != "":
		// Content of a type Switchboard does not know is stored as
		// unsupported, named by its field, not dropped.
		return text("[unsupported " + m.unread + " message]")
	}
	return domain.Content{}, false
}
