// Package erasure is the erasure of one person of an account: everything
// the service stores about them (their contact, their individual threads,
// their messages, reactions and group memberships, the events and webhook
// deliveries that carry them, their emails and sandbox mail when they are
// known by an email address) is deleted, and a Record keeps who erased
// whom and when, without the content: the person is known in it by the
// kind of identifier given and a keyed hash of it.
package erasure

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// Kind is the kind of identifier a person is named by.
type Kind string

// The kinds of identifiers.
const (
	// Contact is a contact id (con_…): the person and every phone number
	// and provider user id the contact holds.
	Contact Kind = "contact"
	// Phone is a phone number in E.164 form, whether or not a contact
	// holds it.
	Phone Kind = "phone"
	// UserID is a provider's user id (a WhatsApp or Telegram user id, or
	// a Telegram @username), whether or not a contact holds it.
	UserID Kind = "user_id"
	// Email is an email address: the emails from and to it and the
	// sandbox mail to it.
	Email Kind = "email"
)

// Kinds lists every kind.
var Kinds = []Kind{Contact, Phone, UserID, Email}

// MaxUserIDLength bounds a provider user id.
const MaxUserIDLength = 200

// Identifier names a person of an account.
type Identifier struct {
	Kind  Kind
	Value string
}

// Normalized is id with its value as the service stores it: an email
// address in lower case, a Telegram @username in lower case.
func (id Identifier) Normalized() Identifier {
	id.Value = strings.TrimSpace(id.Value)
	switch {
	case id.Kind == Email:
		id.Value = strings.ToLower(id.Value)
	case id.Kind == UserID && strings.HasPrefix(id.Value, "@"):
		id.Value = strings.ToLower(id.Value)
	}
	return id
}

// Check refuses an identifier whose value does not fit its kind, naming
// path (the value's field).
func (id Identifier) Check(kindPath, valuePath []any) error {
	var p failure.Problems
	switch id.Kind {
	case Contact:
		if !ident.Valid(ident.Contact, id.Value) {
			p.Add("value_error", "must be a contact id (con_…)", valuePath...)
		}
	case Phone:
		if !account.ValidE164(id.Value) {
			p.Add("value_error", "must be a phone number in E.164 form such as +14155550100", valuePath...)
		}
	case UserID:
		if id.Value == "" || len(id.Value) > MaxUserIDLength || strings.ContainsAny(id.Value, " \t\r\n") {
			p.Add("value_error", fmt.Sprintf("must be a provider user id of 1 to %d characters without spaces", MaxUserIDLength), valuePath...)
		}
	case Email:
		if _, err := email.ParseAddress(id.Value); err != nil {
			p.Add("value_error", "must be an email address such as someone@example.com", valuePath...)
		}
	default:
		p.Add("enum", "must be one of contact, phone, user_id, email", kindPath...)
	}
	return p.Err()
}

// Record is the audit record of one erasure: no content, only who asked,
// whom (the kind of identifier and its keyed hash), what was deleted
// (rows per table) and when.
type Record struct {
	ID        string
	AccountID string
	// RequestedBy is who asked: "key:" and a credential id, "session:"
	// and a credential id (the dashboard), or "cli" (the operator).
	RequestedBy    string
	Kind           Kind
	IdentifierHash string
	// Counts are the rows deleted per table; tables with none are left
	// out, so a second erasure of a person has no counts.
	Counts map[string]int
	At     time.Time
}

// Total is the number of rows the erasure deleted.
func (r Record) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// ChatKey is a provider chat of an agent number.
type ChatKey struct {
	NumberID string
	ChatID   string
}

// Target is everything stored about a person of an account, found in the
// transaction that deletes it: the rows to delete, by key, and how many
// rows of each table they are.
type Target struct {
	AccountID string
	// Found tells whether a contact named by id exists: an unknown
	// contact id is NotFound unless it was erased before.
	Found bool
	// ContactIDs are the person's contacts (people).
	ContactIDs []string
	// Addresses are what the person is known by on the channels: phone
	// numbers, provider user ids, @usernames (contacts, participants,
	// reactors, senders).
	Addresses []string
	// ThreadIDs are the person's individual threads, deleted whole;
	// GroupThreadIDs the groups they take part in, which stay without
	// them.
	ThreadIDs      []string
	GroupThreadIDs []string
	// MessageIDs are the messages deleted: every message of their
	// individual threads and theirs in groups.
	MessageIDs []string
	// EventIDs are the events that carry them; DeliveryIDs the webhook
	// deliveries of those events, pending or not.
	EventIDs    []string
	DeliveryIDs []string
	// EmailIDs are the emails from or to their email address;
	// SandboxSeqs the sandbox mailbox's mail to or from it, SandboxBytes
	// its size.
	EmailIDs []string
	// SpoolIDs are the raw messages received from their address and
	// not yet parsed.
	SpoolIDs     []string
	SandboxSeqs  []int64
	SandboxBytes int64
	// IdempotencyKeys are the stored answers to Idempotency-Keys that
	// carry them.
	IdempotencyKeys []string
	// JobIDs are the queued work that names them (a send of their
	// message, a delivery of their event) or whose last error quotes
	// them: cancelled when pending, its error cleared.
	JobIDs []int64
	// Chats are the provider chats that showed them (their user, phone or
	// username).
	Chats []ChatKey
	// Counts are the rows of each table that go.
	Counts map[string]int
}
