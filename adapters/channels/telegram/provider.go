package telegram

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Name is the provider name agent numbers use.
const Name = account.ProviderTelegram

// Chats says which Telegram chat a group thread or a person is.
type Chats interface {
	ChatOfThread(ctx context.Context, n account.Number, threadID string) (string, error)
	ChatOfAddress(ctx context.Context, n account.Number, address string) (string, error)
}

// Provider sends through the Bot API.
type Provider struct {
	Client *Client
	Chats  Chats
	// Media downloads group pictures (setChatPhoto takes an upload, not a
	// URL); it must be the SSRF-safe client.
	Media *http.Client
}

var (
	_ messaging.Provider      = (*Provider)(nil)
	_ messaging.GroupProvider = (*Provider)(nil)
)

// Capabilities: every kind, into private chats and groups.
func (p *Provider) Capabilities() messaging.Capabilities {
	return messaging.Capabilities{
		Kinds:   []domain.Kind{domain.KindText, domain.KindImage, domain.KindVideo, domain.KindAudio, domain.KindDocument, domain.KindLocation},
		Groups:  true,
		Buttons: true,
	}
}

// message is the part of a sent Message the receipt needs.
type message struct {
	MessageID int64 `json:"message_id"`
	Chat      struct {
		ID int64 `json:"id"`
	} `json:"chat"`
}

// MessageID is the provider message id of a message in a chat of a bot:
// Telegram numbers messages per chat, and two bots may share a group.
func MessageID(numberID string, chatID, messageID int64) string {
	return fmt.Sprintf("%s:%d:%d", numberID, chatID, messageID)
}

// messageInChat is the Telegram message id within chat of a provider
// message id (see MessageID); false when the id is of another chat or
// not one of this form.
func messageInChat(providerID, chat string) (int64, bool) {
	parts := strings.Split(providerID, ":")
	if len(parts) != 3 || parts[1] != chat {
		return 0, false
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	return id, err == nil
}

// Send delivers one message.
func (p *Provider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Receipt{}, err
	}
	chat := m.To
	if m.ThreadTyp == domain.Group {
		var err error
		if chat, err = p.groupChat(ctx, m.Number, m.To); err != nil {
			return messaging.Receipt{}, err
		}
	}
	params := map[string]any{"chat_id": chat}
	c := m.Content
	var method string
	switch c.Kind {
	case domain.KindText:
		method = "sendMessage"
		params["text"] = c.Text
		if len(c.Buttons) > 0 {
			params["reply_markup"] = inlineKeyboard(c.Buttons)
		}
	case domain.KindImage, domain.KindVideo, domain.KindAudio, domain.KindDocument:
		field := map[domain.Kind]string{domain.KindImage: "photo", domain.KindVideo: "video", domain.KindAudio: "audio", domain.KindDocument: "document"}[c.Kind]
		method = "send" + strings.ToUpper(field[:1]) + field[1:]
		params[field] = c.MediaURL
		if c.Caption != "" {
			params["caption"] = c.Caption
		}
	case domain.KindLocation:
		params["latitude"], params["longitude"] = c.Latitude, c.Longitude
		method = "sendLocation"
		if c.PlaceName != "" && c.Address != "" {
			method = "sendVenue"
			params["title"], params["address"] = c.PlaceName, c.Address
		}
	default:
		return messaging.Receipt{}, &messaging.ProviderError{Code: "not_supported_by_provider", Message: "telegram cannot send " + string(c.Kind), Permanent: true}
	}
	if id, ok := messageInChat(m.ReplyTo.ProviderMessageID, chat); ok {
		// A reply quotes the message it answers.
		params["reply_parameters"] = map[string]any{"message_id": id}
	}
	var sent message
	if err := p.Client.Call(ctx, m.Settings, method, params, &sent); err != nil {
		return messaging.Receipt{}, err
	}
	return messaging.Receipt{ProviderMessageID: MessageID(m.Number.ID, sent.Chat.ID, sent.MessageID), Status: domain.Sent}, nil
}

// inlineKeyboard is the reply_markup of a message with reply buttons: an
// inline keyboard of one button per row, each sending its id back as
// callback_data.
//
//	{"inline_keyboard":[[{"text":"Yes","callback_data":"yes"}],[{"text":"No","callback_data":"no"}]]}
func inlineKeyboard(buttons []domain.Button) map[string]any {
	rows := make([]any, len(buttons))
	for i, b := range buttons {
		rows[i] = []any{map[string]any{"text": b.Title, "callback_data": b.ID}}
	}
	return map[string]any{"inline_keyboard": rows}
}

// callbackPrefix marks the provider message id of a button press: the
// callback query's id, unique per bot (see CallbackMessageID).
const callbackPrefix = ":callback:"

// CallbackMessageID is the provider message id of the button press a
// callback query of a bot reports: the press is stored once per query.
func CallbackMessageID(numberID, queryID string) string { return numberID + callbackPrefix + queryID }

var _ messaging.Acknowledger = (*Provider)(nil)

// Acknowledge answers the callback query of a button press
// (answerCallbackQuery), so that the user's app stops showing progress
// on the button. A press answered too late (Telegram keeps a query open
// for a short while) is refused by Telegram for good.
func (p *Provider) Acknowledge(ctx context.Context, in messaging.InboundAck) error {
	_, query, ok := strings.Cut(in.Message.ProviderMessageID, callbackPrefix)
	if !ok || query == "" {
		return nil // not a callback query: nothing to answer
	}
	return p.Client.Call(ctx, in.Settings, "answerCallbackQuery", map[string]any{"callback_query_id": query}, nil)
}

// ApplyGroupChange makes a group action in the Telegram chat. Bots cannot
// create groups, join them by invite code, or add members.
func (p *Provider) ApplyGroupChange(ctx context.Context, c messaging.GroupChange) error {
	if c.Action == domain.ActionCreate || c.Action == domain.ActionJoin || c.Action == domain.ActionJoinGroup {
		return messaging.ErrNotSupported
	}
	chat, err := p.Chats.ChatOfThread(ctx, c.Number, c.Group.Thread.ID)
	if failure.Is(err, failure.KindNotFound) {
		return messaging.ErrNotSupported // a group Telegram does not know
	}
	if err != nil {
		return err
	}
	call := func(method string, params map[string]any) error {
		params["chat_id"] = chat
		return p.Client.Call(ctx, c.Settings, method, params, nil)
	}
	g := c.Group
	switch c.Action {
	case domain.ActionUpdateName:
		return call("setChatTitle", map[string]any{"title": g.Thread.Name})
	case domain.ActionUpdateDescription:
		return call("setChatDescription", map[string]any{"description": g.Description})
	case domain.ActionUpdatePicture:
		return p.setPhoto(ctx, c.Settings, chat, g.PictureURL)
	case domain.ActionUpdateSettings:
		// Announcement: only admins send. Locked: only admins change the
		// chat's info. Admins are not bound by chat permissions.
		open := !g.Announcement
		return call("setChatPermissions", map[string]any{"permissions": map[string]bool{
			"can_send_messages": open, "can_send_audios": open, "can_send_documents": open, "can_send_photos": open,
			"can_send_videos": open, "can_send_video_notes": open, "can_send_voice_notes": open, "can_send_polls": open,
			"can_send_other_messages": open, "can_add_web_page_previews": open,
			"can_change_info": !g.Locked, "can_invite_users": true, "can_pin_messages": !g.Locked,
		}})
	case domain.ActionPromoteAdmin, domain.ActionDemoteAdmin:
		promote := c.Action == domain.ActionPromoteAdmin
		return p.eachUser(ctx, c, func(user int64) error {
			return call("promoteChatMember", map[string]any{
				"user_id": user, "can_manage_chat": promote, "can_change_info": promote, "can_delete_messages": promote,
				"can_invite_users": promote, "can_restrict_members": promote, "can_pin_messages": promote,
			})
		})
	case domain.ActionRemoveParticipants:
		// Ban then unban: the member is removed but may come back later
		// through an invite link.
		return p.eachUser(ctx, c, func(user int64) error {
			if err := call("banChatMember", map[string]any{"user_id": user}); err != nil {
				return err
			}
			return call("unbanChatMember", map[string]any{"user_id": user, "only_if_banned": true})
		})
	case domain.ActionAddParticipants:
		// A bot cannot add people; it can lift a ban and hand out the
		// chat's invite link.
		if err := p.eachUser(ctx, c, func(user int64) error {
			return call("unbanChatMember", map[string]any{"user_id": user, "only_if_banned": true})
		}); err != nil {
			return err
		}
		var link string
		if err := p.Client.Call(ctx, c.Settings, "exportChatInviteLink", map[string]any{"chat_id": chat}, &link); err != nil {
			return err
		}
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: "Telegram bots cannot add members to a group; send them the group's invite link: " + link}
	case domain.ActionLeave:
		return call("leaveChat", map[string]any{})
	}
	return messaging.ErrNotSupported
}

// eachUser runs fn for the Telegram user id of every participant the
// action names.
func (p *Provider) eachUser(ctx context.Context, c messaging.GroupChange, fn func(user int64) error) error {
	ids := make([]int64, len(c.Participants))
	for i, a := range c.Participants {
		chat, err := p.Chats.ChatOfAddress(ctx, c.Number, a)
		if err != nil {
			return err
		}
		if ids[i], err = strconv.ParseInt(chat, 10, 64); err != nil {
			return failure.Invalid(failure.Field("value_error", a+" is not a Telegram user", "participants", i))
		}
	}
	for _, id := range ids {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// setPhoto downloads the picture (through the SSRF-safe client) and
// uploads it: setChatPhoto takes no URL.
func (p *Provider) setPhoto(ctx context.Context, settings map[string]string, chat, url string) error {
	if p.Media == nil {
		return messaging.ErrNotSupported
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := p.Media.Do(req)
	if err != nil {
		return &messaging.ProviderError{Code: "media_unreachable", Message: err.Error()}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return &messaging.ProviderError{Code: "media_unreachable", Message: fmt.Sprintf("the picture URL answered %d", res.StatusCode), Permanent: true}
	}
	limit := domain.MaxMediaBytes(domain.KindImage)
	picture, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return &messaging.ProviderError{Code: "media_unreachable", Message: err.Error()}
	}
	if int64(len(picture)) > limit {
		return &messaging.ProviderError{Code: "media_too_large", Message: "the picture is larger than 5 MB", Permanent: true}
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("chat_id", chat)
	part, err := w.CreateFormFile("photo", "picture")
	if err != nil {
		return err
	}
	_, _ = part.Write(picture)
	if err := w.Close(); err != nil {
		return err
	}
	if settings[SettingBotToken] == "" {
		return &messaging.ProviderError{Code: "provider_misconfigured", Message: ErrNoToken.Error(), Permanent: true}
	}
	return p.Client.do(ctx, settings, "setChatPhoto", w.FormDataContentType(), &body, nil)
}

// groupChat is the Telegram chat of a group thread of the bot.
func (p *Provider) groupChat(ctx context.Context, n account.Number, threadID string) (string, error) {
	chat, err := p.Chats.ChatOfThread(ctx, n, threadID)
	if failure.Is(err, failure.KindNotFound) {
		return "", &messaging.ProviderError{Code: "recipient_unreachable", Message: "the group is not a Telegram chat of this bot", Permanent: true}
	}
	return chat, err
}

// TypingWindow is how long Telegram shows a chat action: 5 seconds, or
// until the bot's next message.
const TypingWindow = 5 * time.Second

var _ messaging.Indicator = (*Provider)(nil)

// Indicators: typing in private chats and groups. Bots have no read
// receipts: the Bot API cannot show a user that the bot read a message.
func (p *Provider) Indicators() messaging.Indicators {
	return messaging.Indicators{ReadReceipts: false, Groups: true, TypingWindow: TypingWindow}
}

// MarkRead is never called (Indicators has no ReadReceipts); it answers
// that bots have none.
func (p *Provider) MarkRead(context.Context, messaging.Indication) error {
	return &messaging.ProviderError{Code: "not_supported_by_provider", Message: "Telegram bots have no read receipts", Permanent: true}
}

// Typing shows "typing…" in the chat: sendChatAction with action typing.
func (p *Provider) Typing(ctx context.Context, in messaging.Indication) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	chat := in.To
	if in.ThreadType == domain.Group {
		var err error
		if chat, err = p.groupChat(ctx, in.Number, in.ThreadID); err != nil {
			return err
		}
	}
	var done bool
	if err := p.Client.Call(ctx, in.Settings, "sendChatAction", map[string]any{"chat_id": chat, "action": "typing"}, &done); err != nil {
		return err
	}
	if !done {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API answered sendChatAction without true"}
	}
	return nil
}

var _ messaging.Reactor = (*Provider)(nil)

// React sets the bot's reaction on a message, or takes it back with an
// empty emoji: setMessageReaction with reaction [{"type":"emoji","emoji":"👍"}],
// or [] to remove it.
func (p *Provider) React(ctx context.Context, in messaging.OutboundReaction) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	parts := strings.Split(in.Target.ProviderMessageID, ":")
	if len(parts) != 3 {
		return &messaging.ProviderError{Code: "provider_rejected", Message: "the message has no Telegram message id", Permanent: true}
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return &messaging.ProviderError{Code: "provider_rejected", Message: "the message has no Telegram message id", Permanent: true}
	}
	reaction := []map[string]any{}
	if in.Emoji != "" {
		reaction = append(reaction, map[string]any{"type": "emoji", "emoji": telegramEmoji(in.Emoji)})
	}
	var done bool
	if err := p.Client.Call(ctx, in.Settings, "setMessageReaction", map[string]any{"chat_id": parts[1], "message_id": id, "reaction": reaction}, &done); err != nil {
		return err
	}
	if !done {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API answered setMessageReaction without true"}
	}
	return nil
}

// telegramEmoji is an emoji as Telegram's reaction list spells it: a
// symbol with the emoji variation selector (❤️) is listed without it (❤).
func telegramEmoji(e string) string {
	if base, ok := strings.CutSuffix(e, "\ufe0f"); ok && utf8.RuneCountInString(base) == 1 {
		return base
	}
	return e
}
