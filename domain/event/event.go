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

// Event is one entry of the log. Payload is the JSON body webhooks send.
type Event struct {
	ID        string
	AccountID string
	Type      Type
	ThreadID  string
	Payload   []byte
	CreatedAt time.Time
}
