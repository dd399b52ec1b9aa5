package rest

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// EmailUseCases is what the REST adapter needs from the email use cases.
type EmailUseCases interface {
	CreateAddress(ctx context.Context, accountID, local, domainName string) (account.EmailAddress, error)
	Send(ctx context.Context, in appemail.SendInput) (email.Email, error)
	Email(ctx context.Context, accountID, id string) (email.Email, error)
}

func (s *server) mountEmail(api *edge.Routes) {
	if s.email == nil {
		return
	}
	api.Handle(http.MethodPost, "/emails/{account_id}/create-email", s.idempotent(s.createEmailAddress))
	api.Handle(http.MethodPost, "/emails/{account_id}/send", s.idempotentAnswering(s.sendEmail))
	api.Handle(http.MethodGet, "/emails/{account_id}/messages/{email_id}", s.getEmail)
	if in, ok := s.email.(InboxUseCases); ok {
		s.mountInbox(api, in)
	}
}

type createEmailBody struct {
	Address    *string `json:"address"`
	DomainName *string `json:"domain_name"`
}

type createEmailResult struct {
	Status     string `json:"status"`
	Address    string `json:"address"`
	EmailID    string `json:"email_id"`
	LocalPart  string `json:"local_part"`
	DomainName string `json:"domain_name"`
	CreatedAt  string `json:"created_at"`
}

func (s *server) createEmailAddress(w http.ResponseWriter, r *http.Request) {
	var b createEmailBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Address, "address")
	required(&p, b.DomainName, "domain_name")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	a, err := s.email.CreateAddress(r.Context(), mux.Vars(r)["account_id"], *b.Address, *b.DomainName)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, createEmailResult{
		Status: "success", Address: a.Address(), EmailID: a.ID, LocalPart: a.LocalPart, DomainName: a.Domain,
		CreatedAt: timestamp(a.CreatedAt),
	})
}

type sendEmailBody struct {
	SenderAddress    *string              `json:"sender_address"`
	RecipientAddress *appemail.Recipients `json:"recipient_address"`
	Subject          *string              `json:"subject"`
	Body             *string              `json:"body"`
	Headers          map[string]any       `json:"headers"`
	AttachmentURI    *string              `json:"attachment_uri"`
}

type sendEmailResult struct {
	Status    string `json:"status"`
	EmailID   string `json:"email_id"`
	Recipient string `json:"recipient"`
	// Recipients are every To address, Recipient the first.
	Recipients  []string `json:"recipients"`
	Sender      string   `json:"sender"`
	Subject     string   `json:"subject"`
	MessageID   string   `json:"message_id"`
	ThreadID    string   `json:"thread_id,omitempty"`
	DateCreated string   `json:"date_created"`
}

func (s *server) sendEmail(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b sendEmailBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.SenderAddress, "sender_address")
	required(&p, b.RecipientAddress, "recipient_address")
	required(&p, b.Subject, "subject")
	required(&p, b.Body, "body")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	in := appemail.SendInput{
		AccountID: mux.Vars(r)["account_id"], SenderAddress: *b.SenderAddress,
		Subject: *b.Subject, Body: *b.Body, Headers: b.Headers, AttachmentURI: str(b.AttachmentURI),
		Idempotency: edge.AnswerWith(key, sendEmailAnswer),
	}
	b.RecipientAddress.Set(&in)
	e, err := s.email.Send(r.Context(), in)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, sendEmailAnswer(e))
}

// sendEmailAnswer is the answer to an email send, as written and as
// recorded for its Idempotency-Key.
func sendEmailAnswer(e email.Email) idempotency.Response {
	return jsonAnswer(http.StatusOK, sendEmailResult{
		Status: string(e.Status), EmailID: e.ID, Recipient: e.To, Recipients: email.Addresses(e.AllTo()), Sender: e.From, Subject: e.Subject,
		MessageID: e.MessageID, ThreadID: e.ThreadID, DateCreated: timestamp(e.CreatedAt),
	})
}

type emailDetails struct {
	EmailID          string `json:"email_id"`
	AccountID        string `json:"account_id"`
	Status           string `json:"status"`
	SenderAddress    string `json:"sender_address"`
	RecipientAddress string `json:"recipient_address"`
	// To are every To recipient with their display names.
	To            []email.Mailbox   `json:"to"`
	Cc            []string          `json:"cc"`
	Bcc           []string          `json:"bcc"`
	ReplyTo       []string          `json:"reply_to"`
	Subject       string            `json:"subject"`
	Body          string            `json:"body"`
	HTML          bool              `json:"html"`
	Headers       map[string]string `json:"headers"`
	AttachmentURI string            `json:"attachment_uri,omitempty"`
	MessageID     string            `json:"message_id"`
	SMTPReply     string            `json:"smtp_reply"`
	ErrorCode     string            `json:"error_code,omitempty"`
	Attempts      int               `json:"attempts"`
	DateCreated   string            `json:"date_created"`
	DateUpdated   string            `json:"date_updated"`
	DateSent      string            `json:"date_sent,omitempty"`
	// The fields of threads and received email.
	Direction      string                       `json:"direction,omitempty"`
	ThreadID       string                       `json:"thread_id,omitempty"`
	Mailbox        string                       `json:"mailbox,omitempty"`
	SenderName     string                       `json:"sender_name,omitempty"`
	InReplyTo      string                       `json:"in_reply_to,omitempty"`
	References     []string                     `json:"references,omitempty"`
	HTMLBody       string                       `json:"html_body,omitempty"`
	ExtractedText  string                       `json:"extracted_text,omitempty"`
	Authentication *email.Authentication        `json:"authentication,omitempty"`
	DMARCFailed    bool                         `json:"dmarc_failed,omitempty"`
	Attachments    []appemail.AttachmentSummary `json:"attachments,omitempty"`
	Size           int64                        `json:"size,omitempty"`
	ParseProblem   string                       `json:"parse_problem,omitempty"`
}

func (s *server) getEmail(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	read := s.email.Email
	if s.inbox != nil {
		read = s.inbox.EmailWithAttachments
	}
	e, err := read(r.Context(), vars["account_id"], vars["email_id"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	d := emailDetails{
		EmailID: e.ID, AccountID: e.AccountID, Status: string(e.Status), SenderAddress: e.From, RecipientAddress: e.To, To: nonNil(e.AllTo()),
		Cc: nonNil(e.Cc), Bcc: nonNil(e.Bcc), ReplyTo: nonNil(e.ReplyTo), Subject: e.Subject, Body: e.Body, HTML: e.HTML,
		Headers: map[string]string{}, AttachmentURI: e.AttachmentURI, MessageID: e.MessageID, SMTPReply: e.Reply,
		ErrorCode: e.FailureCode, Attempts: e.Attempts,
		DateCreated: timestamp(e.CreatedAt), DateUpdated: timestamp(e.UpdatedAt),
	}
	for _, h := range e.Headers {
		d.Headers[h.Name] = h.Value
	}
	d.Direction, d.ThreadID, d.Mailbox, d.InReplyTo, d.References = string(e.Direction), e.ThreadID, e.Mailbox, e.InReplyTo, e.References
	d.SenderName = e.FromName
	if e.Direction == email.Inbound {
		auth := e.Auth
		d.HTMLBody, d.ExtractedText, d.Authentication, d.DMARCFailed = e.HTMLBody, e.ExtractedText, &auth, auth.DMARCFailed()
		d.Attachments, d.Size, d.ParseProblem = appemail.Summaries(e.Attachments), e.Size, e.ParseProblem
	}
	if e.SentAt != nil {
		d.DateSent = timestamp(*e.SentAt)
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": d})
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
