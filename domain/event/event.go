// Package event is the account event log: everything that happened that a
// customer may want pushed to a webhook or read by polling, in order.
package event

import "time"

// Type names a kind of event.
type Type string

// The group events; message events join them with the webhooks work.
const (
	GroupCreated             Type = "group.created"
	GroupParticipantsAdded   Type = "group.participants_added"
	GroupParticipantsRemoved Type = "group.participants_removed"
	GroupAdminsChanged       Type = "group.admins_changed"
	GroupUpdated             Type = "group.updated"
	GroupLeft                Type = "group.left"
)

// The message events, the webhook test event and the record kept when an
// endpoint is disabled.
const (
	MessageReceived Type = "message.received"
	MessageSent     Type = "message.sent"
	MessageStatus   Type = "message.status"
	// MessageReaction is a reaction set on a message, or taken back.
	MessageReaction Type = "message.reaction"
	// MessageEdited is a user's edit of a message; MessageDeleted, a
	// user's deletion of one for everyone.
	MessageEdited  Type = "message.edited"
	MessageDeleted Type = "message.deleted"
	// EmailReceived is an email the SMTP listener received for one of
	// the account's addresses.
	EmailReceived Type = "email.received"
	// EmailSent is a sent email the relay accepted; EmailFailed, one it
	// refused or that could not be delivered before retries ran out;
	// EmailBounced, one a receiving server reported undeliverable
	// afterwards with a delivery status notification.
	EmailSent        Type = "email.sent"
	EmailFailed      Type = "email.failed"
	EmailBounced     Type = "email.bounced"
	WebhookTest      Type = "webhook.test"
	EndpointDisabled Type = "endpoint.disabled"
)

// Types lists every event type a webhook may subscribe to.
var Types = []Type{
	MessageReceived, MessageSent, MessageStatus, MessageReaction, MessageEdited, MessageDeleted,
	EmailReceived, EmailSent, EmailFailed, EmailBounced,
	GroupCreated, GroupParticipantsAdded, GroupParticipantsRemoved, GroupAdminsChanged, GroupUpdated, GroupLeft,
	WebhookTest, EndpointDisabled,
}

// Event is one entry of the log. Payload is the JSON body webhooks send.
type Event struct {
	ID        string
	AccountID string
	Type      Type
	ThreadID  string
	Payload   []byte
	CreatedAt time.Time
}
