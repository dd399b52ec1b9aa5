package messaging

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// InboundInput is a message a user sent to an agent number, as a provider
// (or the sandbox) reports it.
type InboundInput struct {
	// AccountID, when set, must own the agent number (the sandbox route
	// names the account in its path).
	AccountID string
	Service   string
	// From is the user's address: a phone number in E.164 form, a
	// Telegram chat id, a WhatsApp business-scoped user id when the
	// provider showed no phone number, or messaging.UnknownSender when it
	// showed no id at all.
	From       string
	SenderName string
	// UserID and Username are the user's WhatsApp business-scoped user
	// id and username, or their Telegram username, where the provider
	// showed them; Phone is their phone number where it showed one (a
	// Telegram user who shared theirs).
	UserID   string
	Username string
	Phone    string
	// Chat, when set, records what the provider chat showed about the
	// user (a Telegram chat), so that sends may name them by it.
	Chat *writes.ChatContact
	// Change, when set, is the provider's notice that the user has a new
	// phone number or user id: their contact takes it.
	Change *ContactChange
	// To is the agent number.
	To string
	// ThreadID, when set, is the group the message was sent in.
	ThreadID string
	Content  messaging.Content
	Fields   messaging.Fields
	// ProviderMessageID dedupes reports the provider sends twice.
	ProviderMessageID string
	// SentAt is when the user sent the message, as the provider says;
	// zero when it does not say. A provider's customer service window
	// opens from it (see Windowed).
	SentAt time.Time
	// ReplyTo is the message this one quotes: by the provider's id (and
	// the quoted text, where the provider sends it), or, from the
	// sandbox, by Switchboard's id.
	ReplyTo messaging.Reply
	// Acknowledge asks for the report to be acknowledged at the provider
	// once the message is stored (a Telegram callback query): the stored
	// message's AcknowledgeKind job does it.
	Acknowledge bool
	// Provider, when set, is the provider the agent number must be on.
	Provider account.Provider
	// Idempotency, when set, records the answer under its Idempotency-Key
	// in the transaction that stores the message (the sandbox route).
	Idempotency *idempotency.Completion[messaging.Message]
}

// ContactChange is a user's new phone number (E.164) or WhatsApp user id.
type ContactChange struct {
	Phone  string
	UserID string
}

// Receive stores an inbound message durably, creating the contact and the
// thread as needed; once it returns, the message exists and the user has
// started the conversation with that agent number.
func (s *Service) Receive(ctx context.Context, in InboundInput) (messaging.Message, error) {
	var p failure.Problems
	service := checkInboundAddresses(in.Service, in.From, in.To, &p)
	if len(in.SenderName) > 200 {
		p.Add("string_too_long", "sender_name must be at most 200 characters", "sender_name")
	}
	if err := checkInboundContent(in.Content, in.Fields); err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	if err := p.Err(); err != nil {
		return messaging.Message{}, err
	}
	var out messaging.Message
	decide := func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		b, m, err := s.receive(ctx, tx, in, service)
		out = m
		return b, err
	}
	err := s.store.Decide(ctx, decide)
	if errors.Is(err, writes.ErrThreadExists) {
		// Another message of this user created the thread a moment ago:
		// deciding again finds it.
		err = s.store.Decide(ctx, decide)
	}
	return out, err
}

// receive decides what storing an inbound message writes: the message,
// its event, the user's activity, and the thread when the user has none.
// A report of a message stored before writes only its answer.
func (s *Service) receive(ctx context.Context, tx TxReads, in InboundInput, service account.Service) (writes.Batch, messaging.Message, error) {
	if in.ProviderMessageID != "" {
		if existing, err := tx.MessageByProviderID(ctx, service, in.ProviderMessageID); err == nil {
			// A repeated report: stored once. The number's checks ran when
			// it was stored.
			if _, err := s.inboundNumber(ctx, tx, in, service); err != nil {
				return writes.Batch{}, messaging.Message{}, err
			}
			return writes.Batch{Answers: writes.Answering(in.Idempotency, existing)}, existing, nil
		}
	}
	n, thread, b, err := s.inboundThread(ctx, tx, in, service)
	if err != nil {
		return writes.Batch{}, messaging.Message{}, err
	}
	reply, err := inboundReply(ctx, tx, n.AccountID, service, in.ReplyTo)
	if err != nil {
		return writes.Batch{}, messaging.Message{}, err
	}
	if reply.MessageID != "" {
		if m, err := tx.Message(ctx, n.AccountID, reply.MessageID); err == nil && m.ThreadID != thread.ID {
			if in.ReplyTo.MessageID != "" {
				return writes.Batch{}, messaging.Message{}, messaging.ErrReplyToOtherThread("reply_to")
			}
			// A provider's quote of another chat's message keeps its id
			// only.
			reply.MessageID = ""
		}
	}
	content := in.Content
	if content.Kind == messaging.KindButtonReply {
		if content, err = pressedButton(ctx, tx, n.AccountID, reply, in); err != nil {
			return writes.Batch{}, messaging.Message{}, err
		}
	}
	now := s.now().UTC()
	name := strings.TrimSpace(in.SenderName)
	var contactID string
	if thread.Type == messaging.Individual {
		w, id, err := s.inboundContact(ctx, tx, n, thread, in, service, now)
		if err != nil {
			return writes.Batch{}, messaging.Message{}, err
		}
		contactID = id
		for i := range b.Threads {
			if b.Threads[i].Thread.ID == thread.ID {
				// A new thread is stored with its contact.
				b.Threads[i].Thread.ContactID = contactID
				w.Threads = nil
			}
		}
		if w.Contact != nil {
			b.Contacts = append(b.Contacts, w)
		}
	}
	if in.Chat != nil {
		b.Contacts = append(b.Contacts, writes.ContactWrite{Chat: in.Chat})
	}
	m := messaging.Message{
		ID: ident.New(ident.Message), AccountID: n.AccountID, ThreadID: thread.ID, Service: service,
		Direction: messaging.Inbound, From: in.From, To: in.To, SenderName: name,
		Content: content, Status: messaging.Received, ProviderMessageID: in.ProviderMessageID, ReplyTo: reply,
		UserID: in.UserID, Username: in.Username, ContactID: contactID, CreatedAt: now, UpdatedAt: now,
	}
	if in.Acknowledge {
		job, err := acknowledgement(n, m)
		if err != nil {
			return writes.Batch{}, messaging.Message{}, err
		}
		b.Jobs = append(b.Jobs, job)
	}
	b.Add(writes.Batch{
		Messages: []messaging.Message{m},
		Inbound:  []writes.InboundActivity{{AccountID: n.AccountID, Service: service, Address: in.From, Name: name, ThreadID: thread.ID, At: now}},
		Windows:  s.openedWindow(n, thread, content, in.SentAt, now),
		Events:   []event.Event{s.messageEvent(event.MessageReceived, m, thread.Type)},
		Answers:  writes.Answering(in.Idempotency, m),
	})
	return b, m, nil
}

// openedWindow is the customer service window a user's message opens in
// an individual thread of a number whose provider has one: it closes the
// provider's window after the time the provider says the user sent it
// (the time it was received when the provider says none, or a later
// one). A provider's notice about the user opens none.
func (s *Service) openedWindow(n account.Number, t messaging.Thread, c messaging.Content, sentAt, now time.Time) []writes.ThreadWindow {
	if t.Type != messaging.Individual || c.Kind == messaging.KindSystem {
		return nil
	}
	provider, ok := s.providers.Provider(n.Provider)
	if !ok {
		return nil
	}
	windowed, ok := provider.(Windowed)
	if !ok {
		return nil
	}
	if sentAt.IsZero() || sentAt.After(now) {
		sentAt = now
	}
	return []writes.ThreadWindow{{ThreadID: t.ID, ClosesAt: sentAt.UTC().Add(windowed.ServiceWindow())}}
}

// inboundContact is the write that records what an inbound message
// showed about its sender on their contact: the thread's contact, or the
// account's contact with the same phone number or user id, or a new one,
// linked to the thread when it had none; and that contact's id. The
// write's Contact is nil when there is nothing to write.
func (s *Service) inboundContact(ctx context.Context, tx TxReads, n account.Number, thread messaging.Thread, in InboundInput, service account.Service, now time.Time) (writes.ContactWrite, string, error) {
	seen := messaging.Sighting{Service: service, Address: in.From, Phone: in.Phone, UserID: in.UserID, Username: in.Username, Name: in.SenderName}
	var (
		c   messaging.Contact
		err error
	)
	if thread.ContactID != "" {
		c, err = tx.Contact(ctx, n.AccountID, thread.ContactID)
	}
	if c.ID == "" && (err == nil || failure.Is(err, failure.KindNotFound)) && !seen.Identity().Empty() {
		c, err = tx.ContactByIdentity(ctx, n.AccountID, seen.Identity())
	}
	if err != nil && !failure.Is(err, failure.KindNotFound) {
		return writes.ContactWrite{}, "", err
	}
	w := writes.ContactWrite{}
	if c.ID == "" {
		c = messaging.NewContact(ident.New(ident.Contact), n.AccountID, seen, now)
		w.Contact = &c
	} else if c.See(seen, now) {
		w.Contact = &c
	}
	if in.Change != nil {
		c.AddPhone(in.Change.Phone)
		if in.Change.UserID != "" {
			c.WhatsAppUserID = in.Change.UserID
		}
		c.UpdatedAt = now
		w.Contact = &c
	}
	if thread.ContactID != c.ID {
		w.Threads = []string{thread.ID}
	}
	if len(w.Threads) > 0 {
		w.Contact = &c
	}
	return w, c.ID, nil
}

// inboundNumber is the agent number an inbound report is addressed to,
// which must be enabled (and the account's and on the provider, when the
// report names them).
func (s *Service) inboundNumber(ctx context.Context, tx TxReads, in InboundInput, service account.Service) (account.Number, error) {
	n, err := tx.NumberByAddress(ctx, service, in.To)
	if failure.Is(err, failure.KindNotFound) || (err == nil && in.AccountID != "" && n.AccountID != in.AccountID) {
		return account.Number{}, failure.NotFound("agent number " + in.To + " on " + string(service))
	}
	if err != nil {
		return account.Number{}, err
	}
	if !n.Enabled {
		return account.Number{}, failure.Forbidden("number_disabled", "agent number "+in.To+" is disabled")
	}
	if in.Provider != "" && n.Provider != in.Provider {
		return account.Number{}, failure.Forbidden("wrong_provider", "agent number "+in.To+" is not on the "+string(in.Provider)+" provider")
	}
	return n, nil
}

// inboundThread finds the thread an inbound report belongs to: the group
// it names, of which the agent number must be a member, or the user's
// individual thread, which the returned batch creates when there is none.
func (s *Service) inboundThread(ctx context.Context, tx TxReads, in InboundInput, service account.Service) (account.Number, messaging.Thread, writes.Batch, error) {
	var (
		b      writes.Batch
		thread messaging.Thread
	)
	n, err := s.inboundNumber(ctx, tx, in, service)
	if err != nil {
		return account.Number{}, thread, b, err
	}
	if in.ThreadID != "" {
		if thread, err = s.thread(ctx, tx, n.AccountID, in.ThreadID); err != nil {
			return n, thread, b, err
		}
		if thread.Type != messaging.Group || thread.Service != service {
			return n, thread, b, failure.Invalid(failure.Field("value_error", "thread_id must name a group thread on "+string(service), "thread_id"))
		}
		members, err := tx.Participants(ctx, thread.ID)
		if err != nil {
			return n, thread, b, err
		}
		if messaging.CheckGroupSend(in.To, members) != nil {
			return n, thread, b, failure.Conflict("not_group_member", "agent number "+in.To+" is not a member of this group")
		}
		return n, thread, b, nil
	}
	thread, err = tx.IndividualThread(ctx, n.AccountID, n.Service, n.Number, in.From)
	if failure.Is(err, failure.KindNotFound) {
		var created writes.NewThread
		created, thread = s.newIndividualThread(n, in.From, in.SenderName)
		b.Threads = append(b.Threads, created)
		err = nil
	}
	return n, thread, b, err
}

// checkInboundAddresses checks the service, user and agent number of an
// inbound report, recording what is wrong in p, and returns the service.
func checkInboundAddresses(rawService, from, to string, p *failure.Problems) account.Service {
	service, ok := account.ParseService(rawService)
	if !ok {
		p.Add("enum", "service must be one of whatsapp, telegram", "service")
	}
	if ok && from != messaging.UnknownSender && !messaging.ValidRecipient(service, from) {
		p.Add("value_error", "from must be the user's number in E.164 form", "from")
	}
	if !account.ValidE164(to) {
		p.Add("value_error", "to must be the agent number in E.164 form", "to")
	}
	return service
}

// checkInboundContent checks what a user sent; a provider's system
// notice (which no send may carry) is text of its own kind.
func checkInboundContent(c messaging.Content, f messaging.Fields) error {
	if c.Kind == messaging.KindSystem {
		c.Kind = messaging.KindText
	}
	return c.Check(f)
}

// newIndividualThread is a new thread of an agent number and a user, with
// both as its participants.
func (s *Service) newIndividualThread(n account.Number, user, name string) (writes.NewThread, messaging.Thread) {
	now := s.now().UTC()
	t := messaging.Thread{
		ID: ident.New(ident.Thread), AccountID: n.AccountID, Service: n.Service, Type: messaging.Individual,
		AgentNumber: n.Number, Contact: user, Name: strings.TrimSpace(name), CreatedAt: now, UpdatedAt: now,
	}
	if t.Name == "" {
		t.Name = user
	}
	return writes.NewThread{Thread: t, Participants: []messaging.Participant{
		{Address: n.Number, IsAgent: true},
		{Address: user, Name: strings.TrimSpace(name)},
	}}, t
}

// GroupInput describes a group the agent number was added to (the sandbox
// simulates a user creating one).
type GroupInput struct {
	AccountID    string
	Service      string
	AgentNumber  string
	Title        string
	Participants []string
	// Idempotency, when set, records the answer under its Idempotency-Key
	// in the transaction that stores the group (its thread and members).
	Idempotency *idempotency.Completion[messaging.GroupState]
}

// MaxGroupParticipants is WhatsApp's group size limit.
const MaxGroupParticipants = 1024

// CreateGroup stores a group thread with the agent number as an admin
// member and the given participants.
func (s *Service) CreateGroup(ctx context.Context, in GroupInput) (messaging.Thread, []messaging.Participant, error) {
	var p failure.Problems
	service, ok := account.ParseService(in.Service)
	if !ok {
		p.Add("enum", "service must be one of whatsapp, telegram", "service")
	}
	if !account.ValidE164(in.AgentNumber) {
		p.Add("value_error", "agent_number must be in E.164 form", "agent_number")
	}
	title := strings.TrimSpace(in.Title)
	if title == "" || len(title) > 100 {
		p.Add("string_too_short", "title must be 1 to 100 characters", "title")
	}
	switch {
	case len(in.Participants) == 0:
		p.Add("too_short", "participants must list at least one number", "participants")
	case len(in.Participants) > MaxGroupParticipants:
		p.Add("too_long", "a group has at most 1024 participants", "participants")
	}
	seen := map[string]bool{in.AgentNumber: true}
	for i, part := range in.Participants {
		switch {
		case !account.ValidE164(part):
			p.Add("value_error", "participant must be in E.164 form", "participants", i)
		case seen[part]:
			p.Add("value_error", "participant is listed twice (or is the agent number)", "participants", i)
		}
		seen[part] = true
	}
	if err := p.Err(); err != nil {
		return messaging.Thread{}, nil, err
	}
	var (
		t       messaging.Thread
		members []messaging.Participant
	)
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		n, err := s.sendingNumber(ctx, tx, in.AccountID, service, in.AgentNumber)
		if err != nil {
			return writes.Batch{}, err
		}
		if n.Provider != account.ProviderSandbox {
			return writes.Batch{}, failure.Forbidden("wrong_provider", "agent number "+n.Number+" is not on the sandbox provider")
		}
		now := s.now().UTC()
		t = messaging.Thread{
			ID: ident.New(ident.Thread), AccountID: in.AccountID, Service: service, Type: messaging.Group,
			AgentNumber: n.Number, Name: title, CreatedAt: now, UpdatedAt: now,
		}
		members = []messaging.Participant{{Address: n.Number, IsAgent: true, Admin: true}}
		for _, part := range in.Participants {
			members = append(members, messaging.Participant{Address: part})
		}
		group := messaging.GroupState{Thread: t, InviteCode: inviteCode(), Members: members}
		return writes.Batch{Groups: []messaging.GroupState{group}, Answers: writes.Answering(in.Idempotency, group)}, nil
	})
	return t, members, err
}
