package mcp

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/email"
)

const sendEmailToolName = "send_email"

const replyEmailToolName = "reply_email"

func (h *Handler) addEmailTools() error {
	if h.deps.Email == nil {
		return nil
	}
	if err := addTool[sendEmailArgs, sentEmail](h, &sdk.Tool{
		Name:  sendEmailToolName,
		Title: "Send an email",
		Description: "Send an email from one of the account's addresses (else the error code is sender_not_permitted). " +
			"sender_address may carry a display name (\"Acme Support\" <support@…>); recipient_address is one address, a display name with an address, several separated by commas, or a list of them, one an item ([\"Ann <ann@example.org>\", \"\\\"Doe, John\\\" <john@example.net>\"]). " +
			"body is plain text, or HTML (then a text part is generated). The answer is the stored email, status queued: delivery follows (email.sent, email.failed or email.bounced tell the rest). " +
			"Give an idempotency_key to make a retry safe: the same key and arguments within 24 hours answer the first result and send nothing.",
		Annotations: sends,
	}, h.sendEmail, recipientsSchema("recipient_address")); err != nil {
		return err
	}
	return h.addInboxTools()
}

// sendEmailArgs are send_email's arguments.
type sendEmailArgs struct {
	SenderAddress    string              `json:"sender_address" jsonschema:"an address of the account, shown in From, with a display name where wanted: \"Acme Support\" <support@mail.example.com>"`
	RecipientAddress appemail.Recipients `json:"recipient_address"`
	Subject          string              `json:"subject"`
	Body             string              `json:"body" jsonschema:"plain text or HTML"`
	Cc               []string            `json:"cc,omitempty"`
	Bcc              []string            `json:"bcc,omitempty"`
	ReplyTo          []string            `json:"reply_to,omitempty"`
	Headers          map[string]string   `json:"headers,omitempty" jsonschema:"further headers: X-* and the usual safe ones (Importance, In-Reply-To, References, …)"`
	AttachmentURI    string              `json:"attachment_uri,omitempty" jsonschema:"a public URL of a file to attach"`
	IdempotencyKey   string              `json:"idempotency_key,omitempty" jsonschema:"a unique string (at most 255 characters) that makes a retry safe"`
}

// sentEmail is send_email's and reply_email's answer.
type sentEmail struct {
	EmailID    string   `json:"email_id"`
	ThreadID   string   `json:"thread_id" jsonschema:"the email thread (eth_…) it belongs to"`
	Status     string   `json:"status" jsonschema:"queued: stored, delivery follows"`
	Sender     string   `json:"sender"`
	Recipient  string   `json:"recipient" jsonschema:"the first To address"`
	Recipients []string `json:"recipients" jsonschema:"every To address"`
	Subject    string   `json:"subject"`
	MessageID  string   `json:"message_id" jsonschema:"the email's Message-ID header"`
	// InReplyTo is the Message-ID a reply answers.
	InReplyTo   string `json:"in_reply_to,omitempty" jsonschema:"the Message-ID of the email it answers"`
	DateCreated string `json:"date_created"`
}

func sentEmailOf(e email.Email) sentEmail {
	return sentEmail{EmailID: e.ID, ThreadID: e.ThreadID, Status: string(e.Status), Sender: e.From, Recipient: e.To,
		Recipients: email.Addresses(e.AllTo()), Subject: e.Subject, MessageID: e.MessageID, InReplyTo: e.InReplyTo,
		DateCreated: timestamp(e.CreatedAt)}
}

func (h *Handler) sendEmail(ctx context.Context, accountID string, in sendEmailArgs) (any, error) {
	headers, err := appemail.ArgumentHeaders(in.Headers, in.Cc, in.Bcc, in.ReplyTo)
	if err != nil {
		return nil, err
	}
	key := in.IdempotencyKey
	in.IdempotencyKey = ""
	return keyed(ctx, h, accountID, sendEmailToolName, key, in, func(answer *idempotency.Completion[email.Email]) (email.Email, error) {
		send := appemail.SendInput{
			AccountID: accountID, SenderAddress: in.SenderAddress, Subject: in.Subject,
			Body: in.Body, Headers: headers, AttachmentURI: in.AttachmentURI, Idempotency: answer,
		}
		in.RecipientAddress.Set(&send)
		e, err := h.deps.Email.Send(ctx, send)
		return e, appemail.ArgumentProblems(err)
	}, sentEmailOf)
}

// recipientsSchema makes the property at path take a string or a list of
// strings (appemail.Recipients).
func recipientsSchema(path ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := property(s, path...)
		*p = jsonschema.Schema{
			Description: "the To recipients: an address, Name <address>, several separated by commas, or a list of them, one an item",
			AnyOf: []*jsonschema.Schema{
				{Type: "string"},
				{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: ptr(1)},
			},
		}
	}
}
