package messaging

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// WebUIInput is a message of a customer's own web chat to record: A1Base's
// save/web-ui call.
type WebUIInput struct {
	AccountID string
	// ExternalThreadID is the web chat's id of the conversation; it keys
	// the thread.
	ExternalThreadID string
	// ExternalMessageID is the web chat's id of the message; a message
	// recorded before under the same id is answered, not recorded again.
	ExternalMessageID string
	// AgentNumber is the agent's number the chat speaks for.
	AgentNumber string
	Text        string
	// FromAgent tells whether the agent wrote the message (else the user).
	FromAgent bool
	// SenderNumber is the user's number, when the web chat knows one.
	SenderNumber string
	// At is when the message was written; zero, or later than now, means
	// now.
	At time.Time
}

// maxExternalIDLength bounds the web chat's ids, in bytes.
const maxExternalIDLength = 200

// SaveWebUI records a message of a customer's web chat in the account's
// thread of service web-ui keyed by its external thread id, creating the
// thread with its first message. It sends nothing and queues nothing: no
// delivery, no webhook event (the customer's own chat wrote it). A user's
// message is direction inbound with status received; the agent's is
// outbound-api with status sent. Recording the same external message id
// again answers the message recorded first.
//
// Errors: Invalid naming the field for a missing or malformed one.
func (s *Service) SaveWebUI(ctx context.Context, in WebUIInput) (messaging.Message, error) {
	var p failure.Problems
	for _, f := range []struct{ name, value string }{{"external_thread_id", in.ExternalThreadID}, {"external_message_id", in.ExternalMessageID}} {
		switch {
		case strings.TrimSpace(f.value) == "":
			p.Add("missing", f.name+" must not be empty", f.name)
		case len(f.value) > maxExternalIDLength || !utf8.ValidString(f.value):
			p.Add("string_too_long", f.name+" must be at most 200 bytes of UTF-8", f.name)
		}
	}
	if !account.ValidE164(in.AgentNumber) {
		p.Add("value_error", "phone_number must be the agent number in E.164 form, e.g. +14155550100", "phone_number")
	}
	if in.SenderNumber != "" && !account.ValidE164(in.SenderNumber) && in.SenderNumber != in.AgentNumber {
		p.Add("value_error", "sender_number must be empty or a number in E.164 form", "sender_number")
	}
	switch {
	case strings.TrimSpace(in.Text) == "":
		p.Add("string_too_short", "content must not be empty", "content")
	case utf8.RuneCountInString(in.Text) > messaging.MaxTextLength:
		p.Add("string_too_long", "content must be at most 4096 characters", "content")
	}
	if err := p.Err(); err != nil {
		return messaging.Message{}, err
	}
	var out messaging.Message
	decide := func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		b, m, err := s.saveWebUI(ctx, tx, in)
		out = m
		return b, err
	}
	err := s.store.Decide(ctx, decide)
	if errors.Is(err, writes.ErrThreadExists) || failure.Is(err, failure.KindConflict) {
		// The same chat's thread, or the same message, was recorded a
		// moment ago: deciding again finds it.
		err = s.store.Decide(ctx, decide)
	}
	return out, err
}

// webUIMessageID is the provider id a web chat's message is kept under:
// unique per account, as the chat's ids are only its own.
func webUIMessageID(accountID, externalID string) string { return accountID + ":" + externalID }

// saveWebUI decides what recording a web chat's message writes.
func (s *Service) saveWebUI(ctx context.Context, tx TxReads, in WebUIInput) (writes.Batch, messaging.Message, error) {
	providerID := webUIMessageID(in.AccountID, in.ExternalMessageID)
	if existing, err := tx.MessageByProviderID(ctx, account.WebUI, providerID); err == nil {
		return writes.Batch{}, existing, nil
	} else if !failure.Is(err, failure.KindNotFound) {
		return writes.Batch{}, messaging.Message{}, err
	}
	var b writes.Batch
	n := account.Number{AccountID: in.AccountID, Number: in.AgentNumber, Service: account.WebUI}
	thread, err := tx.IndividualThread(ctx, in.AccountID, account.WebUI, in.AgentNumber, in.ExternalThreadID)
	if failure.Is(err, failure.KindNotFound) {
		var created writes.NewThread
		created, thread = s.newIndividualThread(n, in.ExternalThreadID, "")
		b.Threads = append(b.Threads, created)
	} else if err != nil {
		return writes.Batch{}, messaging.Message{}, err
	}
	now := s.now().UTC()
	at := in.At.UTC()
	if at.IsZero() || at.After(now) {
		at = now
	}
	user := in.SenderNumber
	if user == "" || user == in.AgentNumber {
		user = in.ExternalThreadID
	}
	m := messaging.Message{
		ID: ident.New(ident.Message), AccountID: in.AccountID, ThreadID: thread.ID, Service: account.WebUI,
		Direction: messaging.Inbound, From: user, To: in.AgentNumber, Status: messaging.Received,
		Content: messaging.Content{Kind: messaging.KindText, Text: in.Text}, ProviderMessageID: providerID,
		CreatedAt: at, UpdatedAt: now,
	}
	if in.FromAgent {
		m.Direction, m.From, m.To, m.Status = messaging.OutboundAPI, in.AgentNumber, thread.Contact, messaging.Sent
	}
	b.Add(writes.Batch{
		Messages:       []messaging.Message{m},
		ThreadActivity: []writes.ThreadActivity{{ThreadID: thread.ID, At: now}},
	})
	return b, m, nil
}
