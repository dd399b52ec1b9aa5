package mcp

import (
	"context"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// The tool names, as clients call them.
const (
	sendMessageToolName = "send_message"
	listThreadsToolName = "list_threads"
	getMessagesToolName = "get_messages"
	manageGroupToolName = "manage_group"
	waitToolName        = "wait_for_message"
)

var services = []account.Service{account.WhatsApp, account.Telegram}

// The annotations say truthfully what a tool does to the world.
var (
	readOnly = &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	// sends reach people outside the system and are new each time.
	sends = &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}
)

func (h *Handler) addMessagingTools() error {
	if err := addTool[sendMessageArgs, sentMessage](h, &sdk.Tool{
		Name:  sendMessageToolName,
		Title: "Send a message",
		Description: "Send a WhatsApp or Telegram message from one of the account's agent numbers: to a user (to, with service) or into a group (thread_id). " +
			"Give text, or media (an image, video, audio or document at a public URL, with an optional caption). " +
			"A text may offer reply buttons (buttons: [{id, title}]); a user's press arrives as a message of type button_reply with its button_id, answering this message. " +
			"A user must have written to the agent number first, else the error code is conversation_not_started; on WhatsApp Cloud API numbers the user's last message must be less than 24 hours old, else the error code is window_closed (with window_closed_at): send a template with send_template; in a group the agent number must be a member (not_group_member). " +
			"The answer is the stored message, status queued: delivery follows. " +
			"Give an idempotency_key to make a retry safe: the same key and arguments within 24 hours answer the first result and send nothing.",
		Annotations: sends,
	}, h.sendMessage, oneOf(services, "service"), oneOf(messaging.MediaKinds, "media", "type")); err != nil {
		return err
	}
	if err := addTool[listThreadsArgs, threadList](h, &sdk.Tool{
		Name:  listThreadsToolName,
		Title: "List conversations",
		Description: "List the account's threads (one-to-one chats and groups), most recently active first, with their participants and last message. " +
			"phone_number keeps the threads of that number (agent, user or group member). Page with limit and offset.",
		Annotations: readOnly,
	}, h.listThreads, between(1, appmessaging.MaxListLimit, "limit"), byDefault(appmessaging.DefaultListLimit, "limit"),
		atLeastZero("offset"), byDefault(0, "offset")); err != nil {
		return err
	}
	if err := addTool[getMessagesArgs, messagePage](h, &sdk.Tool{
		Name:  getMessagesToolName,
		Title: "Read a conversation",
		Description: "Read a thread's messages, newest first, limit at a time (default 20, at most 100). " +
			"For older messages call again with before set to the next_cursor of the previous answer; no next_cursor means the start of the thread was reached.",
		Annotations: readOnly,
	}, h.getMessages, between(1, appmessaging.MaxPageSize, "limit"), byDefault(appmessaging.DefaultPageSize, "limit")); err != nil {
		return err
	}
	return addTool[manageGroupArgs, groupAnswer](h, &sdk.Tool{
		Name:  manageGroupToolName,
		Title: "Manage a group",
		Description: "Create a group, read one or change one the agent number is in. action create takes title, participants and optional initial_message, description and join_approval_mode; " +
			"update_name takes name; update_description description; update_picture image_url; add_participants, remove_participants, promote_admin and demote_admin take participants; " +
			"join and join_group take invite_code (or thread_id); leave, delete, info and join_requests take thread_id only; update_settings takes setting (announcement: only admins send; not_announcement; locked: only admins edit; unlocked); " +
			"approve_join_requests and reject_join_requests take join_requests (ids join_requests lists); list takes nothing and lists the agent number's groups. " +
			"Every action but create and list names the group in thread_id. Only admins add, remove, promote and demote (not_group_admin). " +
			"On WhatsApp Cloud API numbers a group is created empty and confirmed later (creating until the group.created event, which carries its invite_link); people join with the invite link, " +
			"so add_participants answers use_invite_link, promote and demote admin_roles_fixed, leave use_delete, update_settings settings_not_offered; a group has at most 8 participants.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, h.manageGroup, oneOf(messaging.GroupActions, "action"), oneOf(groupSettings, "setting"), oneOf(joinApprovalModes, "join_approval_mode"))
}

var joinApprovalModes = []messaging.JoinApprovalMode{messaging.JoinAutoApprove, messaging.JoinApprovalRequired}

var groupSettings = []messaging.Setting{messaging.SettingAnnouncement, messaging.SettingNotAnnouncement, messaging.SettingLocked, messaging.SettingUnlocked}

// sendMessageArgs are send_message's arguments.
type sendMessageArgs struct {
	Service        string           `json:"service,omitempty" jsonschema:"the channel, whatsapp or telegram; required with to, and for a group optional (it must be the group's)"`
	From           string           `json:"from" jsonschema:"the agent number to send from, in E.164 form (+14155550100): one of the account's enabled numbers on the service"`
	To             string           `json:"to,omitempty" jsonschema:"the user to write to, in E.164 form (on Telegram also a chat id or @username, on WhatsApp also a user id), or a contact id (con_…, from list_contacts): its conversation with the sending number; give to or thread_id, not both"`
	ThreadID       string           `json:"thread_id,omitempty" jsonschema:"the group thread (thr_…) to write into, instead of to"`
	Text           string           `json:"text,omitempty" jsonschema:"the message text, at most 4096 characters; give text or media"`
	Media          *mediaArgs       `json:"media,omitempty" jsonschema:"a file to send instead of text"`
	ReplyTo        string           `json:"reply_to,omitempty" jsonschema:"a message (msg_…) of the same thread that this one answers: the user sees it quoted"`
	Buttons        []webhook.Button `json:"buttons,omitempty" jsonschema:"reply buttons offered with a text (WhatsApp: at most 3, titles of at most 20 characters, ids of at most 256 bytes; Telegram: at most 10, ids of at most 64 bytes): a press comes back as a message of type button_reply with its button_id"`
	IdempotencyKey string           `json:"idempotency_key,omitempty" jsonschema:"a unique string (at most 255 characters) that makes a retry safe: the same key and arguments within 24 hours answer the first result and send nothing"`
}

type mediaArgs struct {
	Type    string `json:"type" jsonschema:"image, video, audio or document"`
	URL     string `json:"url" jsonschema:"a public http(s) URL of the file (images up to 5 MB, video and audio 16 MB, documents 100 MB)"`
	Caption string `json:"caption,omitempty" jsonschema:"text shown with the file, at most 1024 characters"`
}

// sentMessage is send_message's answer.
type sentMessage struct {
	MessageID   string `json:"message_id"`
	ThreadID    string `json:"thread_id"`
	Status      string `json:"status" jsonschema:"queued: stored, delivery follows"`
	Service     string `json:"service"`
	From        string `json:"from"`
	To          string `json:"to,omitempty"`
	ContactID   string `json:"contact_id,omitempty" jsonschema:"the contact (con_…) the message is to, for an individual send"`
	Body        string `json:"body" jsonschema:"the text or caption sent"`
	DateCreated string `json:"date_created"`
}

func sentMessageOf(m messaging.Message) sentMessage {
	return sentMessage{MessageID: m.ID, ThreadID: m.ThreadID, Status: string(m.Status), Service: string(m.Service),
		From: m.From, To: m.To, ContactID: m.ContactID, Body: m.Content.Summary(), DateCreated: timestamp(m.CreatedAt)}
}

func (h *Handler) sendMessage(ctx context.Context, accountID string, in sendMessageArgs) (any, error) {
	var content messaging.Content
	var fields messaging.Fields
	switch {
	case in.Text != "" && in.Media != nil:
		return nil, invalid("value_error", "give either text or media, not both", "media")
	case in.Media != nil:
		content = messaging.Content{Kind: messaging.Kind(in.Media.Type), MediaURL: in.Media.URL, Caption: in.Media.Caption}
		fields = messaging.Fields{Base: []any{"media"}, MediaURL: "url"}
	case in.Text != "":
		content, fields = messaging.Content{Kind: messaging.KindText, Text: in.Text}, messaging.Fields{Text: "text"}
	default:
		return nil, invalid("missing", "give text or media", "text")
	}
	content.Buttons = webhook.ModelButtons(in.Buttons)
	key := in.IdempotencyKey
	in.IdempotencyKey = ""
	switch {
	case in.To != "" && in.ThreadID != "":
		return nil, invalid("value_error", "give either to (a user) or thread_id (a group), not both", "thread_id")
	case in.ThreadID != "":
		return keyed(ctx, h, accountID, sendMessageToolName, key, in, func(answer *idempotency.Completion[messaging.Message]) (messaging.Message, error) {
			return h.deps.Messaging.SendGroup(ctx, appmessaging.GroupSendInput{
				AccountID: accountID, Service: in.Service, From: in.From, ThreadID: in.ThreadID, Content: content, Fields: fields, ReplyTo: in.ReplyTo, Idempotency: answer,
			})
		}, sentMessageOf)
	case in.To != "":
		if in.Service == "" {
			return nil, invalid("missing", "Field required: the service a message to a user goes out on", "service")
		}
		return keyed(ctx, h, accountID, sendMessageToolName, key, in, func(answer *idempotency.Completion[messaging.Message]) (messaging.Message, error) {
			return h.deps.Messaging.SendIndividual(ctx, appmessaging.SendInput{
				AccountID: accountID, Service: in.Service, From: in.From, To: in.To, Content: content, Fields: fields, ReplyTo: in.ReplyTo, Idempotency: answer,
			})
		}, sentMessageOf)
	}
	return nil, invalid("missing", "give to (a user) or thread_id (a group)", "to")
}

// listThreadsArgs are list_threads' arguments.
type listThreadsArgs struct {
	PhoneNumber string `json:"phone_number,omitempty" jsonschema:"keep the threads of this number (E.164): an agent number, a user or a group member"`
	Limit       int    `json:"limit,omitempty" jsonschema:"threads per page, 1 to 100"`
	Offset      int    `json:"offset,omitempty" jsonschema:"threads to skip"`
}

// threadList is list_threads' answer.
type threadList struct {
	Threads    []threadItem `json:"threads"`
	TotalCount int          `json:"total_count"`
	HasMore    bool         `json:"has_more"`
	// NextOffset is the offset of the next page, when there is one.
	NextOffset int `json:"next_offset,omitempty" jsonschema:"the offset of the next page, when has_more"`
}

type threadItem struct {
	ThreadID     string       `json:"thread_id"`
	Type         string       `json:"type" jsonschema:"individual or group"`
	Service      string       `json:"service"`
	Name         string       `json:"name,omitempty"`
	AgentNumber  string       `json:"agent_number"`
	Contact      string       `json:"contact,omitempty" jsonschema:"the user of an individual thread"`
	Participants []string     `json:"participants"`
	CreatedAt    string       `json:"created_at"`
	LastMessage  *lastMessage `json:"last_message,omitempty"`
	// WindowClosesAt and WindowOpen are the thread's customer service
	// window, for threads whose provider has one.
	WindowClosesAt string `json:"window_closes_at,omitempty" jsonschema:"WhatsApp Cloud API threads: when the 24-hour customer service window (from the user's last message) closes or closed; after it only send_template works until the user writes again"`
	WindowOpen     *bool  `json:"window_open,omitempty" jsonschema:"WhatsApp Cloud API threads: whether send_message is accepted now (false: use send_template)"`
	// Resource is the thread's transcript resource.
	Resource string `json:"resource" jsonschema:"the thread's transcript, as a resource URI"`
}

type lastMessage struct {
	Content    string `json:"content"`
	From       string `json:"from"`
	SenderName string `json:"sender_name"`
	Timestamp  string `json:"timestamp"`
}

func (h *Handler) listThreads(ctx context.Context, accountID string, in listThreadsArgs) (any, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = appmessaging.DefaultListLimit
	}
	list, total, err := h.deps.Messaging.Threads(ctx, appmessaging.ThreadQuery{
		AccountID: accountID, Phone: strings.TrimSpace(in.PhoneNumber), Limit: limit, Offset: in.Offset,
	})
	if err != nil {
		return nil, err
	}
	out := threadList{Threads: make([]threadItem, len(list)), TotalCount: total, HasMore: in.Offset+len(list) < total}
	if out.HasMore {
		out.NextOffset = in.Offset + len(list)
	}
	for i, ts := range list {
		t := ts.Thread
		item := threadItem{
			ThreadID: t.ID, Type: string(t.Type), Service: string(t.Service), Name: t.Name, AgentNumber: t.AgentNumber,
			Participants: addresses(ts.Participants), CreatedAt: timestamp(t.CreatedAt), Resource: threadURI(t.ID),
		}
		if t.Type == messaging.Individual {
			item.Contact = t.Contact
		}
		if t.HasWindow() {
			item.WindowClosesAt, item.WindowOpen = timestamp(*t.WindowClosesAt), ptr(t.WindowOpen(time.Now()))
		}
		if lm := ts.LastMessage; lm != nil {
			item.LastMessage = &lastMessage{Content: lm.Content.Summary(), From: lm.From, SenderName: senderName(*lm), Timestamp: timestamp(lm.CreatedAt)}
		}
		out.Threads[i] = item
	}
	return out, nil
}

// getMessagesArgs are get_messages' arguments.
type getMessagesArgs struct {
	ThreadID string `json:"thread_id" jsonschema:"the thread (thr_…), from list_threads or a message"`
	Limit    int    `json:"limit,omitempty" jsonschema:"messages per page, 1 to 100"`
	Before   string `json:"before,omitempty" jsonschema:"the next_cursor of the previous page, for older messages"`
}

// messagePage is get_messages' answer.
type messagePage struct {
	ThreadID string        `json:"thread_id"`
	Messages []messageItem `json:"messages" jsonschema:"newest first"`
	// NextCursor continues with older messages; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"pass as before for the older messages; absent when there are none"`
}

// messageItem is a message as the tools show it.
type messageItem struct {
	MessageID  string    `json:"message_id"`
	ThreadID   string    `json:"thread_id"`
	Service    string    `json:"service"`
	Direction  string    `json:"direction" jsonschema:"inbound (a user wrote) or outbound-api (the account sent it)"`
	From       string    `json:"from"`
	To         string    `json:"to,omitempty"`
	SenderName string    `json:"sender_name,omitempty"`
	Type       string    `json:"type" jsonschema:"text, image, video, audio, document, location or button_reply (a press of a reply button)"`
	Text       string    `json:"text,omitempty"`
	MediaURL   string    `json:"media_url,omitempty"`
	Caption    string    `json:"caption,omitempty"`
	Location   *location `json:"location,omitempty"`
	Status     string    `json:"status" jsonschema:"received (inbound), or queued, sent, delivered, read, failed"`
	ErrorCode  string    `json:"error_code,omitempty" jsonschema:"why a failed message failed"`
	CreatedAt  string    `json:"created_at"`
	// ReplyTo and QuotedText are what the message answers.
	ReplyTo    string         `json:"reply_to_message_id,omitempty" jsonschema:"the message (msg_…) this one answers"`
	QuotedText string         `json:"quoted_text,omitempty" jsonschema:"the text of the message this one answers"`
	Reactions  []reactionItem `json:"reactions,omitempty" jsonschema:"the message's reactions, one per person"`
	// Buttons, ButtonID and ButtonTitle: reply buttons and their presses.
	Buttons     []webhook.Button `json:"buttons,omitempty" jsonschema:"the reply buttons the message offers"`
	ButtonID    string           `json:"button_id,omitempty" jsonschema:"button_reply: the id of the button pressed, on the message reply_to_message_id"`
	ButtonTitle string           `json:"button_title,omitempty" jsonschema:"button_reply: the title of the button pressed"`
	// EditedAt, PreviousText, Deleted and DeletedAt are the user's edit
	// or deletion of the message.
	EditedAt     string `json:"edited_at,omitempty" jsonschema:"when the user last edited the message"`
	PreviousText string `json:"previous_text,omitempty" jsonschema:"the text before the user's last edit"`
	Deleted      bool   `json:"deleted,omitempty" jsonschema:"the user deleted the message for everyone: it keeps no content"`
	DeletedAt    string `json:"deleted_at,omitempty" jsonschema:"when the user deleted the message"`
	// UserID, Username and ContactID: who sent it.
	UserID    string `json:"user_id,omitempty" jsonschema:"the WhatsApp business-scoped user id of the sender, where known"`
	Username  string `json:"username,omitempty" jsonschema:"the sender's username, where known"`
	ContactID string `json:"contact_id,omitempty" jsonschema:"the contact (con_…) of the thread's user: who sent an inbound message, or whom an outbound one is to; see get_contact"`
}

type reactionItem struct {
	Emoji       string `json:"emoji"`
	Reactor     string `json:"reactor" jsonschema:"who reacted: the user, or the agent number"`
	IsFromAgent bool   `json:"is_from_agent"`
}

type location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
}

func messageItemOf(m messaging.Message) messageItem {
	item := messageItem{
		MessageID: m.ID, ThreadID: m.ThreadID, Service: string(m.Service), Direction: string(m.Direction), From: m.From, To: m.To,
		SenderName: m.SenderName, Type: string(m.Content.Kind), Status: string(m.Status), ErrorCode: m.FailureCode, CreatedAt: timestamp(m.CreatedAt),
		ReplyTo: m.ReplyTo.MessageID, QuotedText: m.ReplyTo.Text, PreviousText: m.PreviousText, Deleted: m.Deleted(),
		UserID: m.UserID, Username: m.Username, ContactID: m.ContactID,
	}
	if m.EditedAt != nil {
		item.EditedAt = timestamp(*m.EditedAt)
	}
	if m.DeletedAt != nil {
		item.DeletedAt = timestamp(*m.DeletedAt)
	}
	for _, r := range m.Reactions {
		item.Reactions = append(item.Reactions, reactionItem{Emoji: r.Emoji, Reactor: r.Reactor, IsFromAgent: r.FromAgent})
	}
	switch c := m.Content; {
	case c.Kind == messaging.KindText, c.Kind == messaging.KindSystem:
		item.Text, item.Buttons = c.Text, webhook.Buttons(c.Buttons)
	case c.Kind == messaging.KindButtonReply:
		item.ButtonID, item.ButtonTitle = c.ButtonID, c.Text
	case c.Kind == messaging.KindLocation:
		item.Location = &location{Latitude: c.Latitude, Longitude: c.Longitude, Name: c.PlaceName, Address: c.Address}
	default:
		item.MediaURL, item.Caption = c.MediaURL, c.Caption
	}
	return item
}

func (h *Handler) getMessages(ctx context.Context, accountID string, in getMessagesArgs) (any, error) {
	page, err := h.deps.Messaging.History(ctx, appmessaging.HistoryQuery{AccountID: accountID, ThreadID: in.ThreadID, Limit: in.Limit, Before: in.Before})
	if err != nil {
		return nil, err
	}
	out := messagePage{ThreadID: in.ThreadID, Messages: make([]messageItem, len(page.Messages)), NextCursor: page.NextCursor()}
	for i, m := range page.Messages {
		out.Messages[i] = messageItemOf(m)
	}
	return out, nil
}

// ownThread is nil when threadID is a thread of the account, and not
// found otherwise, another account's thread included.
func (h *Handler) ownThread(ctx context.Context, accountID, threadID string) error {
	found, err := h.deps.Threads.Threads(ctx, accountID, []string{threadID})
	if err != nil {
		return err
	}
	if _, ok := found[threadID]; !ok {
		return failure.NotFound("thread")
	}
	return nil
}

// manageGroupArgs are manage_group's arguments: every field any action
// takes; an action refuses the others.
type manageGroupArgs struct {
	Action           string   `json:"action" jsonschema:"what to do"`
	AgentNumber      string   `json:"agent_number" jsonschema:"the account's agent number acting (E.164, starting with +)"`
	ThreadID         string   `json:"thread_id,omitempty" jsonschema:"the group (thr_…); every action but create and list"`
	Title            string   `json:"title,omitempty" jsonschema:"create: the group's name"`
	Participants     []string `json:"participants,omitempty" jsonschema:"create, add_participants, remove_participants, promote_admin, demote_admin: numbers in E.164 form"`
	InitialMessage   string   `json:"initial_message,omitempty" jsonschema:"create: a first message to the group"`
	Name             string   `json:"name,omitempty" jsonschema:"update_name: the new name"`
	Description      string   `json:"description,omitempty" jsonschema:"create, update_description: the group's description"`
	ImageURL         string   `json:"image_url,omitempty" jsonschema:"update_picture: a public URL of the new picture"`
	InviteCode       string   `json:"invite_code,omitempty" jsonschema:"join, join_group: the group's invite code"`
	Setting          string   `json:"setting,omitempty" jsonschema:"update_settings: the new setting"`
	JoinApprovalMode string   `json:"join_approval_mode,omitempty" jsonschema:"create, on WhatsApp Cloud API numbers: whether people who open the invite link join at once or ask to join"`
	JoinRequests     []string `json:"join_requests,omitempty" jsonschema:"approve_join_requests, reject_join_requests: the ids of the requests"`
}

// given names the optional arguments present.
func (a manageGroupArgs) given() map[string]bool {
	return map[string]bool{
		"thread_id": a.ThreadID != "", "title": a.Title != "", "participants": a.Participants != nil,
		"initial_message": a.InitialMessage != "", "name": a.Name != "", "description": a.Description != "",
		"image_url": a.ImageURL != "", "invite_code": a.InviteCode != "", "setting": a.Setting != "",
		"join_approval_mode": a.JoinApprovalMode != "", "join_requests": a.JoinRequests != nil,
	}
}

// groupAnswer is manage_group's answer: the group after the action, with
// what the action read.
type groupAnswer struct {
	Message      string   `json:"message" jsonschema:"what happened"`
	ThreadID     string   `json:"thread_id" jsonschema:"the group; empty for list"`
	Title        string   `json:"title"`
	Service      string   `json:"service"`
	Participants []string `json:"participants"`
	Admins       []string `json:"admins"`
	Description  string   `json:"description"`
	PictureURL   string   `json:"picture_url"`
	InviteCode   string   `json:"invite_code"`
	InviteLink   string   `json:"invite_link,omitempty" jsonschema:"the link people join the group with, where the provider makes one"`
	Creating     bool     `json:"creating,omitempty" jsonschema:"the provider has not confirmed the group yet"`
	Announcement bool     `json:"announcement" jsonschema:"only admins may send"`
	Locked       bool     `json:"locked" jsonschema:"only admins may change the name, description, picture and settings"`
	Invited      []string `json:"invited,omitempty" jsonschema:"create on a provider that adds nobody: the people to send the invite link to"`
	// ProviderGroup, JoinRequests and Groups answer info, join_requests
	// and list.
	ProviderGroup *edge.ProviderGroupView  `json:"provider_group,omitempty"`
	JoinRequests  []edge.JoinRequestView   `json:"join_requests,omitempty"`
	Groups        []edge.ProviderGroupView `json:"groups,omitempty"`
}

func (h *Handler) manageGroup(ctx context.Context, accountID string, in manageGroupArgs) (any, error) {
	var p failure.Problems
	action := messaging.GroupAction(in.Action)
	given := in.given()
	for name, present := range given {
		if allowed, known := edge.GroupActionFields[action]; present && known && !slices.Contains(allowed, name) {
			p.Add("extra_forbidden", name+" is not an argument of action "+in.Action, name)
		}
	}
	for _, name := range edge.GroupRequiredFields[action] {
		if !given[name] {
			p.Add("missing", "Field required", name)
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	res, err := h.deps.Messaging.ManageGroup(ctx, appmessaging.GroupCommand{
		AccountID: accountID, Action: in.Action, AgentNumber: in.AgentNumber, ThreadID: in.ThreadID, Title: in.Title,
		Participants: in.Participants, ParticipantsGiven: in.Participants != nil, InitialMessage: in.InitialMessage,
		Name: in.Name, Description: in.Description, ImageURL: in.ImageURL, InviteCode: in.InviteCode, Setting: in.Setting,
		JoinApprovalMode: in.JoinApprovalMode, JoinRequests: in.JoinRequests, JoinRequestsGiven: in.JoinRequests != nil,
	})
	if err != nil {
		return nil, err
	}
	if action == messaging.ActionList {
		return groupAnswer{Message: res.Message, Participants: []string{}, Admins: []string{}, Groups: edge.GroupsOf(res.Groups)}, nil
	}
	g := res.Group
	out := groupAnswer{
		Message: res.Message, ThreadID: g.Thread.ID, Title: g.Thread.Name, Service: string(g.Thread.Service),
		Participants: addresses(g.Members), Admins: edge.GroupAdmins(g), Description: g.Description, PictureURL: g.PictureURL,
		InviteCode: g.InviteCode, InviteLink: g.InviteLink, Creating: g.Creating, Announcement: g.Announcement, Locked: g.Locked,
		Invited: res.Invited, JoinRequests: edge.JoinRequestsOf(res.JoinRequests),
	}
	if res.Info != nil {
		info := edge.ProviderGroupOf(*res.Info)
		out.ProviderGroup = &info
	}
	return out, nil
}

func addresses(parts []messaging.Participant) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Address
	}
	return out
}

func senderName(m messaging.Message) string {
	if m.SenderName != "" {
		return m.SenderName
	}
	return m.From
}

// timestamp is how times are shown: RFC 3339 in UTC, as REST shows them.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
