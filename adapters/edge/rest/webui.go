package rest

import (
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// webUIBody is A1Base's save/web-ui call: a message of the customer's own
// web chat.
type webUIBody struct {
	ExternalThreadID  *string `json:"external_thread_id"`
	Content           *string `json:"content"`
	Service           *string `json:"service"`
	PhoneNumber       *string `json:"phone_number"`
	ExternalMessageID *string `json:"external_message_id"`
	FromAgent         *bool   `json:"from_agent"`
	SenderNumber      *string `json:"sender_number"`
	MessageType       *string `json:"message_type"`
	// Timestamp is when the message was written, in Unix milliseconds.
	Timestamp *int64 `json:"timestamp"`
}

// saveWebUI records a web chat's message in its web-ui thread (see
// messaging.Service.SaveWebUI) and answers it as get-recent lists it.
func (s *server) saveWebUI(w http.ResponseWriter, r *http.Request) {
	var b webUIBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.ExternalThreadID, "external_thread_id")
	required(&p, b.ExternalMessageID, "external_message_id")
	required(&p, b.Content, "content")
	required(&p, b.PhoneNumber, "phone_number")
	if b.Service != nil && *b.Service != string(account.WebUI) {
		p.Add("enum", "service must be web-ui", "service")
	}
	if b.MessageType != nil && *b.MessageType != string(domain.KindText) {
		p.Add("enum", "message_type must be text", "message_type")
	}
	var at time.Time
	if b.Timestamp != nil {
		if *b.Timestamp <= 0 {
			p.Add("greater_than", "timestamp must be a positive number of Unix milliseconds", "timestamp")
		} else {
			at = time.UnixMilli(*b.Timestamp)
		}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	m, err := s.messaging.SaveWebUI(r.Context(), messaging.WebUIInput{
		AccountID: principal.AccountID, ExternalThreadID: *b.ExternalThreadID, ExternalMessageID: *b.ExternalMessageID,
		AgentNumber: *b.PhoneNumber, Text: *b.Content, FromAgent: b.FromAgent != nil && *b.FromAgent, SenderNumber: str(b.SenderNumber), At: at,
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, webUIAnswer{Data: threadMessageItems([]domain.Message{m})[0], Status: "success"})
}

type webUIAnswer struct {
	Data   threadMessageBody `json:"data"`
	Status string            `json:"status"`
}
