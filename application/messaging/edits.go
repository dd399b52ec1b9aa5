package messaging

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// InboundChange is a user's edit of a message they sent, or its deletion
// for everyone, as a provider (or the sandbox) reports it.
type InboundChange struct {
	// AccountID, when set, must own the agent number (the sandbox).
	AccountID  string
	Service    string
	From       string
	SenderName string
	// To is the agent number.
	To string
	// ThreadID, when set, is the group the message was sent in.
	ThreadID string
	// TargetProviderID is the provider's id of the message changed;
	// TargetMessageID (the sandbox) names it by Switchboard's id instead.
	TargetProviderID string
	TargetMessageID  string
	// Deleted makes the change a deletion; otherwise Content is the
	// message as edited: its new text, or its media with the new caption.
	Deleted bool
	Content messaging.Content
	// At is when the user made the change, as the provider says (zero:
	// when it is stored).
	At time.Time
	// Provider, when set, is the provider the agent number must be on.
	Provider account.Provider
}

// ReceiveChange applies a user's edit or deletion to the message it
// names and records its message.edited or message.deleted event, in one
// transaction, and returns the message as it is now.
//
// An edit replaces the text of a text message or the caption of media and
// keeps the text before it (PreviousText) and its time; a deletion keeps
// no content. A report that changes nothing (the same report again, an
// edit older than the stored one, an edit of a deleted message) writes
// nothing and records no event. A change of a message Switchboard never
// stored is stored as that message (edited, or deleted), under the
// provider's id, with its event (previously_stored false): a later report
// of the original is then a repeat, and the same change again changes
// nothing. A provider's id naming another user's or thread's message is
// an event only, naming the provider's id.
//
// Errors: those of Receive; NotFound when TargetMessageID names no message
// of the account; Invalid (naming message_id) when it names a message the
// user did not send in the thread.
func (s *Service) ReceiveChange(ctx context.Context, in InboundChange) (messaging.Message, error) {
	var p failure.Problems
	service := checkInboundAddresses(in.Service, in.From, in.To, &p)
	if len(in.SenderName) > 200 {
		p.Add("string_too_long", "sender_name must be at most 200 characters", "sender_name")
	}
	if text := in.Content.EditableText(); !in.Deleted {
		switch {
		case !in.Content.Kind.IsMedia() && strings.TrimSpace(text) == "":
			p.Add("string_too_short", "text must not be empty", "text")
		case utf8.RuneCountInString(text) > messaging.MaxTextLength:
			p.Add("string_too_long", "text must be at most 4096 characters", "text")
		}
	}
	if err := p.Err(); err != nil {
		return messaging.Message{}, err
	}
	var out messaging.Message
	decide := func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		b, m, err := s.change(ctx, tx, in, service)
		out = m
		return b, err
	}
	err := s.store.Decide(ctx, decide)
	if errors.Is(err, writes.ErrThreadExists) {
		err = s.store.Decide(ctx, decide)
	}
	return out, err
}

// change decides what a user's edit or deletion writes.
func (s *Service) change(ctx context.Context, tx TxReads, in InboundChange, service account.Service) (writes.Batch, messaging.Message, error) {
	msg := InboundInput{AccountID: in.AccountID, From: in.From, SenderName: in.SenderName, To: in.To, ThreadID: in.ThreadID, Provider: in.Provider}
	n, thread, b, err := s.inboundThread(ctx, tx, msg, service)
	if err != nil {
		return writes.Batch{}, messaging.Message{}, err
	}
	target, found, err := s.changeTarget(ctx, tx, n.AccountID, thread, service, in)
	if err != nil {
		return writes.Batch{}, messaging.Message{}, err
	}
	now := s.now().UTC()
	at := in.At.UTC()
	if in.At.IsZero() {
		at = now
	}
	if !found {
		// Switchboard never had the message: it is stored as the change
		// shows it, unless the provider's id is another's message.
		m := messaging.Message{
			ID: ident.New(ident.Message), AccountID: n.AccountID, ThreadID: thread.ID, Service: service,
			Direction: messaging.Inbound, From: in.From, To: in.To, SenderName: strings.TrimSpace(in.SenderName),
			Content: in.Content, Status: messaging.Received, ProviderMessageID: in.TargetProviderID, EditedAt: &at,
			CreatedAt: now, UpdatedAt: now,
		}
		if in.Deleted {
			m.Content, m.EditedAt, m.DeletedAt = messaging.Content{Kind: messaging.KindText}, nil, &at
		}
		if target.ID == "" {
			b.Messages = append(b.Messages, m)
		} else {
			m.ID = ""
		}
		b.Events = append(b.Events, s.changeEvent(m, thread, false))
		return b, m, nil
	}
	m := target
	switch {
	case target.Deleted():
		// Deleted already: the same deletion again, or an edit of a
		// message that is gone.
		return b, target, nil
	case in.Deleted:
		m.Content, m.PreviousText, m.DeletedAt = messaging.Content{Kind: messaging.KindText}, "", &at
	default:
		text := in.Content.EditableText()
		if text == target.Content.EditableText() || (target.EditedAt != nil && at.Before(*target.EditedAt)) {
			// The same edit again, or one older than the stored one.
			return b, target, nil
		}
		m.PreviousText, m.Content, m.EditedAt = target.Content.EditableText(), target.Content.WithEditedText(text), &at
	}
	m.UpdatedAt = now
	b.MessageChanges = append(b.MessageChanges, writes.MessageChange{
		MessageID: m.ID, Content: m.Content, PreviousText: m.PreviousText, EditedAt: m.EditedAt, DeletedAt: m.DeletedAt, UpdatedAt: now,
	})
	b.Events = append(b.Events, s.changeEvent(m, thread, true))
	return b, m, nil
}

// changeTarget finds, and locks, the message a change names: found when
// it is a message the user sent in the thread. A provider's id of another
// message answers found false with that message (its ID set); one
// Switchboard does not have answers found false and no message.
func (s *Service) changeTarget(ctx context.Context, tx TxReads, accountID string, thread messaging.Thread, service account.Service, in InboundChange) (messaging.Message, bool, error) {
	ours := func(m messaging.Message) bool {
		return m.AccountID == accountID && m.ThreadID == thread.ID && m.Direction == messaging.Inbound && m.From == in.From
	}
	if in.TargetMessageID != "" {
		if !ident.Valid(ident.Message, in.TargetMessageID) {
			return messaging.Message{}, false, failure.NotFound("message")
		}
		m, err := tx.MessageForUpdate(ctx, accountID, in.TargetMessageID)
		if err != nil {
			return messaging.Message{}, false, err
		}
		if !ours(m) {
			return messaging.Message{}, false, failure.Invalid(failure.Field("value_error",
				"message_id must name a message this user sent in the thread", "message_id"))
		}
		return m, true, nil
	}
	m, err := tx.MessageByProviderID(ctx, service, in.TargetProviderID)
	if failure.Is(err, failure.KindNotFound) {
		return messaging.Message{}, false, nil
	}
	if err != nil {
		return messaging.Message{}, false, err
	}
	if !ours(m) {
		return m, false, nil
	}
	m, err = tx.MessageForUpdate(ctx, accountID, m.ID)
	return m, err == nil, err
}

// changeEvent is the message.edited or message.deleted event about m, as
// it is after the change, in thread t; stored tells whether Switchboard
// had the message before.
func (s *Service) changeEvent(m messaging.Message, t messaging.Thread, stored bool) event.Event {
	typ := event.MessageEdited
	if m.Deleted() {
		typ = event.MessageDeleted
	}
	id := ident.New(ident.Event)
	now := s.now().UTC()
	payload := webhook.NewChangePayload(typ, id, s.withMediaLink(m), t.Type, stored, now).JSON()
	return event.Event{ID: id, AccountID: t.AccountID, Type: typ, ThreadID: t.ID, Payload: payload, CreatedAt: now}
}
