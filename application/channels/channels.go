// Package channels holds the use cases that real messaging providers
// (the Telegram Bot API, the WhatsApp Cloud API) need beyond sending: who
// is behind a provider chat (so that a send may name a user by phone
// number, chat id or @username), which provider group chat is which group
// thread, and inbound updates and delivery statuses, deduplicated and
// handed to the messaging use cases.
package channels

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
)

// Contact is what a provider showed about a user of an agent number: the
// chat id it addresses them by, and the username and phone number they
// made known (empty when unknown).
type Contact struct {
	NumberID string
	ChatID   string
	// Username is lower-case, without the @.
	Username  string
	Phone     string
	Name      string
	UpdatedAt time.Time
}

// Repos is the storage the channel use cases need. Lookups that find
// nothing return failure NotFound.
type Repos interface {
	NumberByID(ctx context.Context, id string) (account.Number, error)
	NumbersByProvider(ctx context.Context, provider account.Provider) ([]account.Number, error)

	ChannelContactByChat(ctx context.Context, numberID, chatID string) (Contact, error)
	ChannelContactByUsername(ctx context.Context, numberID, username string) (Contact, error)
	ChannelContactByPhone(ctx context.Context, numberID, phone string) (Contact, error)

	TxReads
	// ThreadGroupChat finds the provider group chat of a group thread.
	ThreadGroupChat(ctx context.Context, numberID, threadID string) (string, error)
	// MoveGroupChat gives a group chat its new chat id; unknown chats are
	// left alone.
	MoveGroupChat(ctx context.Context, numberID, from, to string) error

	// MarkUpdate records a provider update as handled; it reports false
	// when it was recorded before.
	MarkUpdate(ctx context.Context, numberID, key string, at time.Time) (bool, error)
	UpdateSeen(ctx context.Context, numberID, key string) (bool, error)

	MessageByProviderID(ctx context.Context, service account.Service, providerID string) (messaging.Message, error)
}

// TxReads are the reads a decision about a provider group chat makes
// inside its transaction (see Store.Decide). Lookups that find nothing
// return failure NotFound.
type TxReads interface {
	// GroupChatThread finds the group thread of a provider group chat.
	GroupChatThread(ctx context.Context, numberID, chatID string) (string, error)
	// Group reads a group thread of an account with its members. Inside
	// a decision it locks the group's row until the decision ends.
	Group(ctx context.Context, accountID, threadID string) (messaging.GroupState, error)
}

// Store gives the use cases their repositories, and runs the decisions
// about group chats, which read inside the transaction that writes.
type Store interface {
	Repos() Repos
	// Decide runs decide in a transaction, reading through tx, and writes
	// the batch it returns in that transaction. When decide fails, nothing
	// is written and Decide returns its error. Otherwise Decide returns
	// writes.Committer's errors.
	Decide(ctx context.Context, decide func(ctx context.Context, tx TxReads) (writes.Batch, error)) error
}

// Opener opens a number's sealed provider settings.
type Opener interface {
	NumberSettings(n account.Number) (map[string]string, error)
}

// Directory answers who and what is behind provider addresses; the
// providers use it to address chats, the messaging use cases to resolve
// a recipient.
type Directory struct {
	store Store
}

// NewDirectory builds the directory over the store.
func NewDirectory(s Store) *Directory { return &Directory{store: s} }

var _ appmessaging.RecipientResolver = (*Directory)(nil)

// chatID is a Telegram chat id: a user (positive) or a group (negative).
var chatID = regexp.MustCompile(`^-?[0-9]{1,20}$`)

// ResolveRecipient turns what a send names into the address the thread
// with that user is kept under: on a Telegram bot, a known phone number or
// @username becomes the user's chat id. Anything unknown is returned as
// given (the send then finds no conversation with it).
func (d *Directory) ResolveRecipient(ctx context.Context, n account.Number, to string) (string, error) {
	if n.Provider != account.ProviderTelegram || chatID.MatchString(to) {
		return to, nil
	}
	var (
		c   Contact
		err error
	)
	switch {
	case strings.HasPrefix(to, "@"):
		c, err = d.store.Repos().ChannelContactByUsername(ctx, n.ID, strings.ToLower(strings.TrimPrefix(to, "@")))
	case account.ValidE164(to):
		c, err = d.store.Repos().ChannelContactByPhone(ctx, n.ID, to)
	default:
		return to, nil
	}
	if failure.Is(err, failure.KindNotFound) {
		return to, nil
	}
	if err != nil {
		return "", err
	}
	return c.ChatID, nil
}

// ChatOfThread is the provider chat of a group thread.
func (d *Directory) ChatOfThread(ctx context.Context, n account.Number, threadID string) (string, error) {
	return d.store.Repos().ThreadGroupChat(ctx, n.ID, threadID)
}

// ChatOfAddress is the provider chat id of a person a group action names:
// a chat id as given, a phone number or @username through what the user
// showed the bot. Unknown people are failure Invalid.
func (d *Directory) ChatOfAddress(ctx context.Context, n account.Number, address string) (string, error) {
	id, err := d.ResolveRecipient(ctx, n, address)
	if err != nil {
		return "", err
	}
	if !chatID.MatchString(id) {
		return "", failure.Invalid(failure.Field("value_error",
			address+" is not known to this bot: Telegram knows a user by phone number only once they shared it with the bot", "participants"))
	}
	return id, nil
}

// Numbers lists the agent numbers on a provider, every account's.
func (d *Directory) Numbers(ctx context.Context, p account.Provider) ([]account.Number, error) {
	return d.store.Repos().NumbersByProvider(ctx, p)
}

// Receiver is what the channel use cases hand inbound traffic to.
type Receiver interface {
	Receive(ctx context.Context, in appmessaging.InboundInput) (messaging.Message, error)
	ReceiveReaction(ctx context.Context, in appmessaging.InboundReaction) (messaging.Reaction, error)
	ReceiveChange(ctx context.Context, in appmessaging.InboundChange) (messaging.Message, error)
	ApplyStatus(ctx context.Context, service account.Service, providerID string, to messaging.Status, code, text string) error
	ApplyGroupReport(ctx context.Context, r appmessaging.GroupReport) error
}

// Service runs the inbound use cases of the real providers.
type Service struct {
	store    Store
	receiver Receiver
	opener   Opener
	now      func() time.Time
	log      *slog.Logger
}

// Deps are what the inbound use cases are built from.
type Deps struct {
	Store    Store
	Receiver Receiver
	Opener   Opener
	Now      func() time.Time
	Logger   *slog.Logger
}

// NewService builds the inbound use cases.
func NewService(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{store: d.Store, receiver: d.Receiver, opener: d.Opener, now: d.Now, log: d.Logger}
}

// Number reads an agent number on provider p with its opened settings. A
// missing number and one on another provider are the same NotFound, so an
// inbound route tells a caller nothing about numbers it does not serve.
func (s *Service) Number(ctx context.Context, p account.Provider, numberID string) (account.Number, map[string]string, error) {
	if !ident.Valid(ident.Number, numberID) {
		return account.Number{}, nil, failure.NotFound("number")
	}
	n, err := s.store.Repos().NumberByID(ctx, numberID)
	if err != nil {
		return account.Number{}, nil, err
	}
	if n.Provider != p {
		return account.Number{}, nil, failure.NotFound("number")
	}
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return account.Number{}, nil, err
	}
	return n, settings, nil
}

// Sender is who wrote an inbound message.
type Sender struct {
	// ChatID is how the provider addresses the user: a Telegram user id,
	// a WhatsApp number in E.164 form, a WhatsApp business-scoped user id
	// when the provider showed no number, or messaging.UnknownSender.
	ChatID   string
	Username string
	Phone    string
	Name     string
	// UserID is the WhatsApp business-scoped user id, where shown.
	UserID string
}

// Inbound is a message a provider reported.
type Inbound struct {
	Number account.Number
	// UpdateKey, when set, dedupes the provider's update (Telegram's
	// update_id) besides its message id.
	UpdateKey string
	Sender    Sender
	// GroupChatID and GroupTitle are set for a message in a group chat.
	GroupChatID string
	GroupTitle  string
	Content     messaging.Content
	// ProviderMessageID dedupes the message.
	ProviderMessageID string
	// SentAt is when the user sent the message, as the provider says;
	// zero when it does not say.
	SentAt time.Time
	// ReplyTo is what the message quotes: the provider's id of the
	// quoted message and, where the provider sends it, its text.
	ReplyTo messaging.Reply
	// Reaction, when set, makes the report a reaction rather than a
	// message: Content is then not stored.
	Reaction *Reaction
	// Acknowledge asks for the report to be acknowledged at the provider
	// once stored (a Telegram callback query), by a job.
	Acknowledge bool
	// Change, when set, makes the report a user's edit or deletion of the
	// message it names rather than a message: Content is then the message
	// as edited.
	Change *Change
	// IdentityChange, when set, is a provider's notice that the user changed
	// their phone number or user id (a WhatsApp system message): it is
	// stored as a system message and updates the user's contact.
	IdentityChange *IdentityChange
}

// Change is a user's edit of a message, or its deletion for everyone.
type Change struct {
	// TargetProviderID is the provider's id of the message changed.
	TargetProviderID string
	Deleted          bool
	// At is when the user made the change, as the provider says.
	At time.Time
}

// IdentityChange is a user's new phone number or WhatsApp user id.
type IdentityChange struct {
	// Type is the provider's name for it (user_changed_number,
	// user_changed_user_id).
	Type string
	// Phone is the new phone number in E.164 form, if it changed.
	Phone string
	// UserID is the new business-scoped user id; PreviousUserID the old.
	UserID         string
	PreviousUserID string
}

// Reaction is a reaction a user set on a message, or took back.
type Reaction struct {
	// TargetProviderID is the provider's id of the message reacted to.
	TargetProviderID string
	// Emoji is empty when the reaction was taken back.
	Emoji string
}

// Receive stores an inbound message: remembers who the sender is, finds
// or makes the group thread of a group chat, and hands the message to the
// messaging use cases. A repeated update or message is stored once.
func (s *Service) Receive(ctx context.Context, in Inbound) error {
	n := in.Number
	if in.UpdateKey != "" {
		seen, err := s.store.Repos().UpdateSeen(ctx, n.ID, in.UpdateKey)
		if err != nil || seen {
			return err
		}
	}
	now := s.now().UTC()
	from := in.Sender.ChatID
	var chat *writes.ChatContact
	if n.Provider == account.ProviderTelegram {
		// What the user showed the bot is stored with the message.
		chat = &writes.ChatContact{NumberID: n.ID, ChatID: in.Sender.ChatID, Username: strings.ToLower(strings.TrimPrefix(in.Sender.Username, "@")),
			Phone: in.Sender.Phone, Name: truncateBytes(in.Sender.Name, maxSenderName), At: now}
		if in.GroupChatID != "" {
			// Group actions name people by phone number: a member who
			// shared theirs is known by it in groups.
			if in.Sender.Phone != "" {
				from = in.Sender.Phone
			} else if known, err := s.store.Repos().ChannelContactByChat(ctx, n.ID, in.Sender.ChatID); err == nil && known.Phone != "" {
				from = known.Phone
			}
		}
	}
	var threadID string
	if in.GroupChatID != "" {
		var err error
		threadID, err = s.groupThread(ctx, n, in.GroupChatID, in.GroupTitle, from, in.Sender.Name)
		if failure.Is(err, failure.KindConflict) {
			// A message racing this one made the group thread first.
			threadID, err = s.groupThread(ctx, n, in.GroupChatID, in.GroupTitle, from, in.Sender.Name)
		}
		if err != nil {
			return err
		}
	}
	err := s.hand(ctx, in, from, threadID, chat)
	if failure.Is(err, failure.KindInvalid) && in.Reaction == nil && in.Change == nil {
		// A message Switchboard cannot represent as sent is kept with
		// what can be kept, never dropped: its content becomes a notice
		// naming the reason, and a sender address that is not one
		// becomes the unknown sender.
		s.log.WarnContext(ctx, "inbound message kept as unsupported", "number_id", n.ID, "provider_message_id", in.ProviderMessageID, "error", err.Error())
		in.Content = messaging.Content{Kind: messaging.KindText, Text: truncate("[unsupported message: "+failure.As(err).Error()+"]", messaging.MaxTextLength)}
		in.ReplyTo = messaging.Reply{}
		if !messaging.ValidRecipient(n.Service, from) {
			from = messaging.UnknownSender
			if messaging.ValidRecipient(n.Service, in.Sender.UserID) {
				from = in.Sender.UserID
			}
		}
		err = s.hand(ctx, in, from, threadID, chat)
	}
	if failure.Is(err, failure.KindInvalid) {
		// A reaction Switchboard cannot place (or a message it could not
		// keep even so) is not retried by the provider for days.
		s.log.WarnContext(ctx, "inbound report dropped", "number_id", n.ID, "provider_message_id", in.ProviderMessageID, "error", err.Error())
		err = nil
	}
	if err != nil {
		return err
	}
	if in.UpdateKey != "" {
		_, err = s.store.Repos().MarkUpdate(ctx, n.ID, in.UpdateKey, now)
	}
	return err
}

// hand gives an inbound report to the messaging use cases; a report the
// other delivery of the same message stored first is no error.
func (s *Service) hand(ctx context.Context, in Inbound, from, threadID string, chat *writes.ChatContact) error {
	n := in.Number
	name := truncateBytes(in.Sender.Name, maxSenderName)
	var err error
	switch {
	case in.Change != nil:
		_, err = s.receiver.ReceiveChange(ctx, appmessaging.InboundChange{
			AccountID: n.AccountID, Service: string(n.Service), From: from, SenderName: name, To: n.Number,
			ThreadID: threadID, TargetProviderID: in.Change.TargetProviderID, Deleted: in.Change.Deleted, Content: in.Content,
			At: in.Change.At, Provider: n.Provider,
		})
	case in.Reaction != nil:
		_, err = s.receiver.ReceiveReaction(ctx, appmessaging.InboundReaction{
			AccountID: n.AccountID, Service: string(n.Service), From: from, SenderName: name, To: n.Number,
			ThreadID: threadID, TargetProviderID: in.Reaction.TargetProviderID, Emoji: in.Reaction.Emoji, Provider: n.Provider, Chat: chat,
		})
	default:
		_, err = s.receiver.Receive(ctx, appmessaging.InboundInput{
			AccountID: n.AccountID, Service: string(n.Service), From: from, SenderName: name, To: n.Number,
			UserID: in.Sender.UserID, Username: truncateBytes(in.Sender.Username, maxSenderName), Phone: in.Sender.Phone,
			Chat: chat, Change: contactChange(in.IdentityChange), ThreadID: threadID, Content: in.Content, ProviderMessageID: in.ProviderMessageID, ReplyTo: in.ReplyTo, Provider: n.Provider,
			Acknowledge: in.Acknowledge, SentAt: in.SentAt,
		})
	}
	if fe := failure.As(err); fe != nil && fe.Kind == failure.KindConflict && fe.Code == "already_exists" {
		// The same message, delivered twice at once, was stored by the
		// other delivery (the unique index on inbound provider ids).
		err = nil
	}
	return err
}

// contactChange is what a provider's notice changes on the user's contact.
func contactChange(c *IdentityChange) *appmessaging.ContactChange {
	if c == nil {
		return nil
	}
	return &appmessaging.ContactChange{Phone: c.Phone, UserID: c.UserID}
}

// maxSenderName is the longest sender name (and username) kept, in bytes.
const maxSenderName = 200

// truncateBytes cuts s to at most n bytes, at a character boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MarkUpdate records an update that carried nothing to store (a service
// message), so that it is not looked at again.
func (s *Service) MarkUpdate(ctx context.Context, n account.Number, key string) error {
	_, err := s.store.Repos().MarkUpdate(ctx, n.ID, key, s.now().UTC())
	return err
}

// groupThread finds or makes the group thread of a provider group chat
// and makes sure the agent number and the sender are members of it.
func (s *Service) groupThread(ctx context.Context, n account.Number, chat, title, member, memberName string) (string, error) {
	var threadID string
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		now := s.now().UTC().Truncate(time.Microsecond)
		id, err := tx.GroupChatThread(ctx, n.ID, chat)
		if err == nil {
			g, err := tx.Group(ctx, n.AccountID, id)
			if err != nil {
				return writes.Batch{}, err
			}
			threadID = id
			changed := false
			if t := strings.TrimSpace(title); t != "" && t != g.Thread.Name {
				g.Thread.Name, changed = truncate(t, messaging.MaxGroupNameLength), true
			}
			if _, err := g.Actor(n.Number); err != nil {
				// The bot was added back after it left.
				g.Members = append(g.Members, messaging.Participant{Address: n.Number, IsAgent: true, Admin: true})
				changed = true
			}
			if !hasMember(g, member) {
				g.Members = append(g.Members, messaging.Participant{Address: member, Name: truncate(memberName, 200)})
				changed = true
			}
			if !changed {
				return writes.Batch{}, nil
			}
			g.Thread.UpdatedAt = now
			return writes.Batch{GroupStates: []messaging.GroupState{g}}, nil
		}
		if !failure.Is(err, failure.KindNotFound) {
			return writes.Batch{}, err
		}
		name := truncate(strings.TrimSpace(title), messaging.MaxGroupNameLength)
		if name == "" {
			name = chat
		}
		g := messaging.GroupState{
			Thread: messaging.Thread{
				ID: ident.New(ident.Thread), AccountID: n.AccountID, Service: n.Service, Type: messaging.Group,
				AgentNumber: n.Number, Name: name, CreatedAt: now, UpdatedAt: now,
			},
			// The provider decides what the bot may do in the group; it
			// refuses what the bot's rights do not allow.
			Members: []messaging.Participant{{Address: n.Number, IsAgent: true, Admin: true}},
		}
		if member != n.Number {
			g.Members = append(g.Members, messaging.Participant{Address: member, Name: truncate(memberName, 200)})
		}
		threadID = g.Thread.ID
		return writes.Batch{
			Groups:     []messaging.GroupState{g},
			GroupChats: []writes.GroupChat{{NumberID: n.ID, ChatID: chat, ThreadID: g.Thread.ID, At: now}},
		}, nil
	})
	return threadID, err
}

// LeftGroup records that the agent number is no longer in a provider
// group chat (removed, or it left): it can no longer send there.
func (s *Service) LeftGroup(ctx context.Context, n account.Number, chat string) error {
	return s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		id, err := tx.GroupChatThread(ctx, n.ID, chat)
		if failure.Is(err, failure.KindNotFound) {
			return writes.Batch{}, nil
		}
		if err != nil {
			return writes.Batch{}, err
		}
		g, err := tx.Group(ctx, n.AccountID, id)
		if err != nil {
			return writes.Batch{}, err
		}
		if g.Leave(n.Number) != nil {
			return writes.Batch{}, nil
		}
		g.Thread.UpdatedAt = s.now().UTC().Truncate(time.Microsecond)
		return writes.Batch{GroupStates: []messaging.GroupState{g}}, nil
	})
}

func hasMember(g messaging.GroupState, address string) bool {
	for _, m := range g.Members {
		if m.Address == address {
			return true
		}
	}
	return false
}

// StatusReport is a delivery status a provider reported for a message it
// sent for an agent number.
type StatusReport struct {
	ProviderMessageID string
	Status            messaging.Status
	// Code and Text explain a failure.
	Code string
	Text string
}

// Status applies a reported status to our message. Reports about messages
// that another agent number sent are ignored: a provider's signature
// vouches only for the number's own traffic.
func (s *Service) Status(ctx context.Context, n account.Number, st StatusReport) error {
	m, err := s.store.Repos().MessageByProviderID(ctx, n.Service, st.ProviderMessageID)
	if failure.Is(err, failure.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if m.AccountID != n.AccountID || m.From != n.Number || m.Direction != messaging.OutboundAPI {
		return nil
	}
	return s.receiver.ApplyStatus(ctx, n.Service, st.ProviderMessageID, st.Status, st.Code, st.Text)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// JoinedGroup records that the agent number is in a provider group chat:
// the chat becomes a group thread (or the agent rejoins it).
func (s *Service) JoinedGroup(ctx context.Context, n account.Number, chat, title string) error {
	_, err := s.groupThread(ctx, n, chat, title, n.Number, "")
	return err
}

// MovedGroup follows a provider group chat to its new chat id (a Telegram
// group that became a supergroup), so that it stays the same group thread.
func (s *Service) MovedGroup(ctx context.Context, n account.Number, from, to string) error {
	err := s.store.Repos().MoveGroupChat(ctx, n.ID, from, to)
	if failure.Is(err, failure.KindConflict) {
		// A message under the new id arrived first and made its own
		// thread; that thread goes on.
		return nil
	}
	return err
}
