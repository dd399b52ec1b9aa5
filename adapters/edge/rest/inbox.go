package rest

import (
	"context"
	"encoding/base64"
	"mime"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// InboxUseCases are the received-email use cases: a mailbox's emails,
// an email with its attachments, an attachment's bytes, the raw message,
// and replies. The REST adapter serves their routes when its email use
// cases offer them.
type InboxUseCases interface {
	MailboxEmails(ctx context.Context, accountID, address string, after *appemail.EmailCursor, limit int) ([]email.Email, bool, error)
	EmailWithAttachments(ctx context.Context, accountID, id string) (email.Email, error)
	Attachment(ctx context.Context, accountID, emailID, id string) (email.Attachment, error)
	Raw(ctx context.Context, accountID, emailID string) ([]byte, error)
	Reply(ctx context.Context, in appemail.ReplyInput) (email.Email, error)
	// Simulate delivers a sandbox email to one of the account's
	// addresses, through the path received email takes.
	Simulate(ctx context.Context, in appemail.SimulatedEmail) (email.Email, error)
}

// mountInbox mounts the received-email routes.
func (s *server) mountInbox(api *edge.Routes, in InboxUseCases) {
	s.inbox = in
	api.Handle(http.MethodGet, "/emails/{account_id}/mailboxes/{address}/messages", s.mailboxEmails)
	api.Handle(http.MethodGet, "/emails/{account_id}/messages/{email_id}/attachments/{attachment_id}", s.emailAttachment)
	api.Handle(http.MethodGet, "/emails/{account_id}/messages/{email_id}/raw", s.rawEmail)
	api.Handle(http.MethodPost, "/emails/{account_id}/messages/{email_id}/reply", s.idempotentAnswering(s.replyEmail))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/inbound-email", s.idempotent(s.sandboxInboundEmail))
}

// emailSummary is an email as a mailbox lists it.
type emailSummary struct {
	EmailID          string                       `json:"email_id"`
	ThreadID         string                       `json:"thread_id"`
	Direction        string                       `json:"direction"`
	Status           string                       `json:"status"`
	SenderAddress    string                       `json:"sender_address"`
	SenderName       string                       `json:"sender_name"`
	RecipientAddress string                       `json:"recipient_address"`
	Subject          string                       `json:"subject"`
	ExtractedText    string                       `json:"extracted_text"`
	MessageID        string                       `json:"message_id"`
	InReplyTo        string                       `json:"in_reply_to"`
	DMARCFailed      bool                         `json:"dmarc_failed"`
	Attachments      []appemail.AttachmentSummary `json:"attachments,omitempty"`
	DateCreated      string                       `json:"date_created"`
}

func summarize(e email.Email) emailSummary {
	text := e.ExtractedText
	if e.Direction != email.Inbound {
		text = e.Body
	}
	return emailSummary{
		EmailID: e.ID, ThreadID: e.ThreadID, Direction: string(e.Direction), Status: string(e.Status), SenderAddress: e.From,
		SenderName: e.FromName, RecipientAddress: e.To, Subject: e.Subject, ExtractedText: text, MessageID: e.MessageID,
		InReplyTo: e.InReplyTo, DMARCFailed: e.Auth.DMARCFailed(), DateCreated: timestamp(e.CreatedAt),
	}
}

// mailboxEmails answers a page of a mailbox, newest first.
func (s *server) mailboxEmails(w http.ResponseWriter, r *http.Request) {
	var p failure.Problems
	limit := limitParam(r, &p, appemail.DefaultPageSize, appemail.MaxPageSize)
	var after *appemail.EmailCursor
	if c := r.URL.Query().Get("cursor"); c != "" {
		var err error
		if after, err = appemail.DecodeCursor(c, "cursor"); err != nil {
			for _, f := range failure.As(err).Fields {
				f.In = "query"
				p = append(p, f)
			}
		}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	list, more, err := s.inbox.MailboxEmails(r.Context(), vars["account_id"], vars["address"], after, limit)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := make([]emailSummary, len(list))
	for i, e := range list {
		data[i] = summarize(e)
	}
	var next *string
	if more {
		c := appemail.EncodeCursor(appemail.EmailCursor{CreatedAt: list[len(list)-1].CreatedAt, ID: list[len(list)-1].ID})
		next = &c
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": data, "next_cursor": next})
}

// emailAttachment streams an attachment's bytes.
func (s *server) emailAttachment(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	a, err := s.inbox.Attachment(r.Context(), vars["account_id"], vars["email_id"], vars["attachment_id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	ct := a.ContentType
	if _, _, err := mime.ParseMediaType(ct); err != nil || ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Content)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox")
	name := a.Name
	if name == "" {
		name = "attachment"
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.Content)
}

// rawEmail answers the message an inbound email was received as.
func (s *server) rawEmail(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	raw, err := s.inbox.Raw(r.Context(), vars["account_id"], vars["email_id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(raw)
}

type replyEmailBody struct {
	Body          *string        `json:"body"`
	Headers       map[string]any `json:"headers"`
	AttachmentURI *string        `json:"attachment_uri"`
}

// replyEmail answers an email of the account; the answer is a send's.
func (s *server) replyEmail(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b replyEmailBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Body, "body")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	e, err := s.inbox.Reply(r.Context(), appemail.ReplyInput{
		AccountID: vars["account_id"], EmailID: vars["email_id"], Body: *b.Body, Headers: b.Headers,
		AttachmentURI: str(b.AttachmentURI), Idempotency: edge.AnswerWith(key, sendEmailAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, sendEmailAnswer(e))
}

type sandboxEmailBody struct {
	From       *string                 `json:"from"`
	To         *string                 `json:"to"`
	Subject    *string                 `json:"subject"`
	Text       *string                 `json:"text"`
	HTML       *string                 `json:"html"`
	InReplyTo  *string                 `json:"in_reply_to"`
	Attachment *sandboxEmailAttachment `json:"attachment"`
	Raw        *string                 `json:"raw"`
}

type sandboxEmailAttachment struct {
	Name        *string `json:"name"`
	ContentType *string `json:"content_type"`
	// Data is the file's bytes in base64.
	Data *string `json:"data"`
}

// sandboxInboundEmail delivers a simulated email to one of the account's
// addresses, as the SMTP listener would have received it.
func (s *server) sandboxInboundEmail(w http.ResponseWriter, r *http.Request) {
	var b sandboxEmailBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.To, "to")
	if b.Raw == nil {
		required(&p, b.From, "from")
	}
	in := appemail.SimulatedEmail{
		AccountID: mux.Vars(r)["accountId"], To: str(b.To), From: str(b.From), Subject: str(b.Subject), Text: str(b.Text),
		HTML: str(b.HTML), InReplyTo: str(b.InReplyTo),
	}
	if b.Raw != nil {
		in.Raw = []byte(*b.Raw)
	}
	if a := b.Attachment; a != nil {
		if a.Name == nil {
			p.Add("missing", "Field required", "attachment", "name")
		}
		if a.Data == nil {
			p.Add("missing", "Field required", "attachment", "data")
		}
		in.Attachment = &appemail.Attachment{Name: str(a.Name), ContentType: str(a.ContentType)}
		if a.Data != nil {
			data, err := base64.StdEncoding.DecodeString(*a.Data)
			if err != nil {
				p.Add("value_error", "data must be the file in base64", "attachment", "data")
			}
			in.Attachment.Data = data
		}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	e, err := s.inbox.Simulate(r.Context(), in)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "email_id": e.ID, "thread_id": e.ThreadID,
		"message_id": e.MessageID, "subject": e.Subject, "date_created": timestamp(e.CreatedAt)})
}
