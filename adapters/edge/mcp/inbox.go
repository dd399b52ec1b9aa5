package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// The email reading tools' names.
const (
	listEmailsToolName = "list_emails"
	getEmailToolName   = "get_email"
)

// addInboxTools offers the tools that read email and answer it.
func (h *Handler) addInboxTools() error {
	if err := addTool[listEmailsArgs, emailList](h, &sdk.Tool{
		Name:  listEmailsToolName,
		Title: "List emails",
		Description: "List the account's emails, received and sent, newest first: all of them, those of one of its addresses (mailbox), " +
			"or one email thread (thread_id eth_…, oldest first, whole). A received email's text is its reply without the quoted history. " +
			"Page with limit (default 20, at most 100) and cursor: the next_cursor of the previous answer; no next_cursor means the end. Read one whole with get_email.",
		Annotations: readOnly,
	}, h.listEmails, between(1, appemail.MaxPageSize, "limit"), byDefault(appemail.DefaultPageSize, "limit")); err != nil {
		return err
	}
	if err := addTool[getEmailArgs, emailView](h, &sdk.Tool{
		Name:  getEmailToolName,
		Title: "Read an email",
		Description: "Read one of the account's emails whole: its text and HTML parts, the reply extracted from a received one, its headers' addressing, " +
			"the sender checks of a received one (SPF, DKIM, DMARC; dmarc_failed: the From is likely forged), its attachments (name, type, size; the bytes are at REST's attachment route), " +
			"and where a sent one is (queued, sent, failed, bounced) with the server's reply.",
		Annotations: readOnly,
	}, h.getEmail); err != nil {
		return err
	}
	return addTool[replyEmailArgs, sentEmail](h, &sdk.Tool{
		Name:  replyEmailToolName,
		Title: "Reply to an email",
		Description: "Answer one of the account's emails: from the address it belongs to, to its sender (its Reply-To, when it has one) for a received email or to its recipients for a sent one, " +
			"with \"Re: \" before its subject and In-Reply-To and References set, in its thread. body is plain text or HTML. " +
			"Give an idempotency_key to make a retry safe: the same key and arguments within 24 hours answer the first result and send nothing.",
		Annotations: sends,
	}, h.replyEmail)
}

// listEmailsArgs are list_emails' arguments.
type listEmailsArgs struct {
	Mailbox  string `json:"mailbox,omitempty" jsonschema:"one of the account's addresses: list its emails only"`
	ThreadID string `json:"thread_id,omitempty" jsonschema:"an email thread (eth_…): list its emails, oldest first"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many emails, 1 to 100"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// emailList is list_emails' answer.
type emailList struct {
	Emails     []emailView `json:"emails"`
	NextCursor string      `json:"next_cursor,omitempty" jsonschema:"give it as cursor for the next page; absent at the end"`
}

// emailView is an email as the tools show it: a listing's fields, and
// get_email's besides.
type emailView struct {
	EmailID   string   `json:"email_id"`
	ThreadID  string   `json:"thread_id" jsonschema:"the email thread (eth_…)"`
	Direction string   `json:"direction" jsonschema:"inbound: received; outbound: sent by the account"`
	Status    string   `json:"status" jsonschema:"received; or, for a sent email, queued, sent, failed or bounced"`
	Mailbox   string   `json:"mailbox" jsonschema:"the account's address it belongs to"`
	From      string   `json:"from"`
	FromName  string   `json:"from_name,omitempty"`
	To        []string `json:"to"`
	Subject   string   `json:"subject"`
	// Text is the reply without its quoted history for a received
	// email, the body for a sent one.
	Text        string `json:"text" jsonschema:"a received email's reply without the quoted history; a sent email's body"`
	MessageID   string `json:"message_id"`
	InReplyTo   string `json:"in_reply_to,omitempty"`
	DMARCFailed bool   `json:"dmarc_failed,omitempty" jsonschema:"the sender's domain publishes DMARC and this email fails it: the From is likely forged"`
	DateCreated string `json:"date_created"`

	// get_email's fields.
	Cc             []string                     `json:"cc,omitempty"`
	ReplyTo        []string                     `json:"reply_to,omitempty"`
	Body           string                       `json:"body,omitempty" jsonschema:"the whole text part, quoted history included"`
	HTML           string                       `json:"html,omitempty" jsonschema:"the HTML part"`
	References     []string                     `json:"references,omitempty"`
	Authentication *email.Authentication        `json:"authentication,omitempty"`
	Attachments    []appemail.AttachmentSummary `json:"attachments,omitempty"`
	SMTPReply      string                       `json:"smtp_reply,omitempty" jsonschema:"a sent email's last server reply (for a bounce, the reasons)"`
	ErrorCode      string                       `json:"error_code,omitempty" jsonschema:"why a sent email failed or bounced"`
	ParseProblem   string                       `json:"parse_problem,omitempty" jsonschema:"where reading a malformed received email stopped"`
}

// emailSummaryOf is e as a listing shows it.
func emailSummaryOf(e email.Email) emailView {
	text := e.ExtractedText
	if e.Direction != email.Inbound {
		text = e.Body
	}
	return emailView{
		EmailID: e.ID, ThreadID: e.ThreadID, Direction: string(e.Direction), Status: string(e.Status), Mailbox: e.Mailbox,
		From: e.From, FromName: e.FromName, To: email.Addresses(e.AllTo()), Subject: e.Subject, Text: text, MessageID: e.MessageID,
		InReplyTo: e.InReplyTo, DMARCFailed: e.Auth.DMARCFailed(), DateCreated: timestamp(e.CreatedAt),
	}
}

// emailDetailsOf is e as get_email shows it.
func emailDetailsOf(e email.Email) emailView {
	v := emailSummaryOf(e)
	v.Cc, v.ReplyTo, v.Body, v.References = e.Cc, e.ReplyTo, e.Body, e.References
	if e.Direction == email.Inbound {
		auth := e.Auth
		v.HTML, v.Authentication, v.Attachments, v.ParseProblem = e.HTMLBody, &auth, appemail.Summaries(e.Attachments), e.ParseProblem
	} else {
		v.SMTPReply, v.ErrorCode = e.Reply, e.FailureCode
		if e.HTML {
			v.HTML = e.Body
		}
	}
	return v
}

// receivedEmailView is the email an email.received event tells of, as a
// listing shows it.
func receivedEmailView(p appemail.ReceivedPayload) emailView {
	return emailView{
		EmailID: p.EmailID, ThreadID: p.ThreadID, Direction: string(email.Inbound), Status: string(email.Received),
		Mailbox: strings.ToLower(p.RecipientAddress), From: p.SenderAddress, FromName: p.SenderName, To: []string{p.RecipientAddress},
		Subject: p.Subject, Text: p.ExtractedText, MessageID: p.MessageID, InReplyTo: p.InReplyTo, DMARCFailed: p.DMARCFailed,
		DateCreated: p.Timestamp,
	}
}

func (h *Handler) listEmails(ctx context.Context, accountID string, in listEmailsArgs) (any, error) {
	var (
		page []email.Email
		more bool
		err  error
	)
	switch {
	case in.ThreadID != "" && (in.Mailbox != "" || in.Cursor != ""):
		return nil, invalid("value_error", "a thread is listed whole: give thread_id alone", "thread_id")
	case in.ThreadID != "":
		page, err = h.deps.Email.ThreadEmails(ctx, accountID, in.ThreadID)
	default:
		var after *appemail.EmailCursor
		if in.Cursor != "" {
			if after, err = appemail.DecodeCursor(in.Cursor, "cursor"); err != nil {
				return nil, err
			}
		}
		if in.Mailbox != "" {
			page, more, err = h.deps.Email.MailboxEmails(ctx, accountID, in.Mailbox, after, in.Limit)
		} else {
			page, more, err = h.deps.Email.Emails(ctx, accountID, after, in.Limit)
		}
	}
	if err != nil {
		return nil, err
	}
	out := emailList{Emails: make([]emailView, len(page))}
	for i, e := range page {
		out.Emails[i] = emailSummaryOf(e)
	}
	if more {
		last := page[len(page)-1]
		out.NextCursor = appemail.EncodeCursor(appemail.EmailCursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	return out, nil
}

// getEmailArgs are get_email's arguments.
type getEmailArgs struct {
	EmailID string `json:"email_id" jsonschema:"the email (eml_…), from list_emails or wait_for_message"`
}

func (h *Handler) getEmail(ctx context.Context, accountID string, in getEmailArgs) (any, error) {
	if in.EmailID == "" {
		return nil, invalid("missing", "email_id is required", "email_id")
	}
	e, err := h.deps.Email.EmailWithAttachments(ctx, accountID, in.EmailID)
	if err != nil {
		return nil, err
	}
	return emailDetailsOf(e), nil
}

// replyEmailArgs are reply_email's arguments.
type replyEmailArgs struct {
	EmailID        string            `json:"email_id" jsonschema:"the email (eml_…) to answer"`
	Body           string            `json:"body" jsonschema:"plain text or HTML"`
	Cc             []string          `json:"cc,omitempty"`
	Bcc            []string          `json:"bcc,omitempty"`
	ReplyTo        []string          `json:"reply_to,omitempty"`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"further headers: X-* and the usual safe ones (Importance, …); the reply sets In-Reply-To and References itself"`
	AttachmentURI  string            `json:"attachment_uri,omitempty" jsonschema:"a public URL of a file to attach"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"a unique string (at most 255 characters) that makes a retry safe"`
}

func (h *Handler) replyEmail(ctx context.Context, accountID string, in replyEmailArgs) (any, error) {
	if in.EmailID == "" {
		return nil, invalid("missing", "email_id is required", "email_id")
	}
	headers, err := appemail.ArgumentHeaders(in.Headers, in.Cc, in.Bcc, in.ReplyTo)
	if err != nil {
		return nil, err
	}
	key := in.IdempotencyKey
	in.IdempotencyKey = ""
	return keyed(ctx, h, accountID, replyEmailToolName, key, in, func(answer *idempotency.Completion[email.Email]) (email.Email, error) {
		e, err := h.deps.Email.Reply(ctx, appemail.ReplyInput{
			AccountID: accountID, EmailID: in.EmailID, Body: in.Body, Headers: headers, AttachmentURI: in.AttachmentURI, Idempotency: answer,
		})
		return e, appemail.ArgumentProblems(err)
	}, sentEmailOf)
}
