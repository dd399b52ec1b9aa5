package rest

import (
	"bytes"
	"io"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/messaging"
)

// readAnswer is the data of a read answer.
type readAnswer struct {
	ThreadID     string `json:"thread_id"`
	Service      string `json:"service"`
	ReadReceipts bool   `json:"read_receipts"`
	MessageID    string `json:"message_id"`
	MarkedRead   int    `json:"marked_read"`
	Note         string `json:"note,omitempty"`
}

// typingAnswer is the data of a typing answer.
type typingAnswer struct {
	ThreadID          string `json:"thread_id"`
	Service           string `json:"service"`
	Sent              bool   `json:"sent"`
	WindowSeconds     int    `json:"window_seconds"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
	MessageID         string `json:"message_id"`
	MarkedRead        int    `json:"marked_read"`
}

// markRead marks a thread read up to its latest inbound message.
func (s *server) markRead(w http.ResponseWriter, r *http.Request) {
	if err := emptyBody(r); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	res, err := s.messaging.MarkRead(r.Context(), vars["accountId"], vars["threadId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := readAnswer{ThreadID: res.ThreadID, Service: string(res.Service), ReadReceipts: res.ReadReceipts, MessageID: res.MessageID, MarkedRead: res.MarkedRead}
	if !res.ReadReceipts {
		data.Note = messaging.NoReadReceipts
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": data})
}

// typing shows the user of a thread that the agent is typing.
func (s *server) typing(w http.ResponseWriter, r *http.Request) {
	if err := emptyBody(r); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	res, err := s.messaging.Typing(r.Context(), vars["accountId"], vars["threadId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": typingAnswer{
		ThreadID: res.ThreadID, Service: string(res.Service), Sent: res.Sent, WindowSeconds: res.WindowSeconds(),
		RetryAfterSeconds: res.RetryAfterSeconds(), MessageID: res.MessageID, MarkedRead: res.MarkedRead,
	}})
}

// emptyBody accepts no body or an empty JSON object.
func emptyBody(r *http.Request) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeBodyError(err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var b struct{}
	return decodeJSON(r, &b)
}
