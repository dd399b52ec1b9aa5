package email

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// What happened to a sent email is an event of its account: email.sent
// when the relay accepted it, email.failed when it refused it or retries
// ran out, and email.bounced when a delivery status notification received
// afterwards reports a recipient it could not be delivered to. Each event
// is committed with the status change it reports, and only with it: the
// status goes queued -> sent -> bounced or queued -> failed (or queued ->
// bounced when the report is read before the relay's answer is
// recorded); failed and bounced are final, so a later report about a
// failed or bounced email is received into its thread and changes
// nothing, and each event is sent at most once an email.

// OutcomePayload is the body of an email.sent, email.failed or
// email.bounced event: the email as it is after the change, and for a
// bounce, what the report said.
type OutcomePayload struct {
	EventHeader
	// Status is sent, failed or bounced.
	Status        string `json:"status"`
	SenderAddress string `json:"sender_address"`
	// RecipientAddress is the first To recipient; To every one.
	RecipientAddress string   `json:"recipient_address"`
	To               []string `json:"to"`
	Cc               []string `json:"cc"`
	Subject          string   `json:"subject"`
	// SMTPReply is the relay's reply (sent, failed) or the receiving
	// server's diagnostic (bounced); ErrorCode says why a failed or
	// bounced email is so.
	SMTPReply string `json:"smtp_reply"`
	ErrorCode string `json:"error_code,omitempty"`
	Attempts  int    `json:"attempts"`
	DateSent  string `json:"date_sent,omitempty"`
	// The fields of email.bounced: the first recipient the report says
	// failed and why, every failed recipient, the server that reported,
	// and the received report (an email of the mailbox).
	Recipient         string                    `json:"recipient,omitempty"`
	Reason            string                    `json:"reason,omitempty"`
	BouncedRecipients []email.ReportedRecipient `json:"bounced_recipients,omitempty"`
	ReportingMTA      string                    `json:"reporting_mta,omitempty"`
	ReportEmailID     string                    `json:"report_email_id,omitempty"`
}

// EventHeader is what the payload of every email event starts with:
// the event, and the email and thread it is about.
type EventHeader struct {
	Event     event.Type `json:"event"`
	EventID   string     `json:"event_id"`
	Timestamp string     `json:"timestamp"`
	AccountID string     `json:"account_id"`
	EmailID   string     `json:"email_id"`
	ThreadID  string     `json:"thread_id"`
	MessageID string     `json:"message_id"`
}

// emailEvent is the event of type typ about e, its payload what payload
// makes of the header.
func (s *Service) emailEvent(typ event.Type, e email.Email, payload func(h EventHeader) any) event.Event {
	id := ident.New(ident.Event)
	now := s.now()
	body, _ := json.Marshal(payload(EventHeader{
		Event: typ, EventID: id, Timestamp: now.Format(webhook.TimeFormat), AccountID: e.AccountID, EmailID: e.ID,
		ThreadID: e.ThreadID, MessageID: e.MessageID,
	}))
	return event.Event{ID: id, AccountID: e.AccountID, Type: typ, ThreadID: e.ThreadID, Payload: body, CreatedAt: now}
}

// outcomeEvent is the event of type typ about e, as e is now.
func (s *Service) outcomeEvent(typ event.Type, e email.Email, fill func(*OutcomePayload)) event.Event {
	return s.emailEvent(typ, e, func(h EventHeader) any {
		p := OutcomePayload{
			EventHeader: h, Status: string(e.Status), SenderAddress: e.From,
			RecipientAddress: e.To, To: email.Addresses(e.AllTo()), Cc: nonNilList(e.Cc), Subject: e.Subject,
			SMTPReply: e.Reply, ErrorCode: e.FailureCode, Attempts: e.Attempts,
		}
		if e.SentAt != nil {
			p.DateSent = e.SentAt.UTC().Format(webhook.TimeFormat)
		}
		if fill != nil {
			fill(&p)
		}
		return p
	})
}

// BounceCode is the error_code of a bounced email.
const BounceCode = "bounced"

// bounce is what a delivery report received as the email report of the
// account's mailbox changes: the sent email it reports on becomes bounced
// (when it was queued or sent) and an email.bounced event tells of it.
// It returns that email (nil when the report names no email of the
// account, or no recipient that failed), which the report's thread joins.
func (s *Service) bounce(ctx context.Context, tx InboxReads, report email.Email, r *email.DeliveryReport) (*email.Email, writes.Batch, error) {
	failed := r.FailedRecipients()
	if len(failed) == 0 {
		return nil, writes.Batch{}, nil
	}
	var links []string
	if r.OriginalMessageID != "" {
		links = append(links, r.OriginalMessageID)
	}
	if report.InReplyTo != "" {
		links = append(links, report.InReplyTo)
	}
	links = append(links, report.References...)
	if len(links) == 0 {
		return nil, writes.Batch{}, nil
	}
	orig, found, err := tx.SentEmail(ctx, report.AccountID, links)
	if err != nil || !found {
		return nil, writes.Batch{}, err
	}
	reasons := make([]string, len(failed))
	for i, f := range failed {
		reasons[i] = f.Address + ": " + f.Reason()
	}
	if !orig.Status.MayBounce() {
		// Failed or bounced already, and told so: the report changes
		// nothing and is only received, into the email's thread.
		return &orig, writes.Batch{}, nil
	}
	orig.Status, orig.FailureCode, orig.Reply, orig.UpdatedAt = email.Bounced, BounceCode, cut(strings.Join(reasons, "; "), 2000), s.now()
	return &orig, writes.Batch{
		EmailBounces: []writes.EmailBounce{{EmailID: orig.ID, Reply: orig.Reply, UpdatedAt: orig.UpdatedAt}},
		Events: []event.Event{s.outcomeEvent(event.EmailBounced, orig, func(p *OutcomePayload) {
			p.Recipient, p.Reason, p.BouncedRecipients = failed[0].Address, failed[0].Reason(), failed
			p.ReportingMTA, p.ReportEmailID = r.ReportingMTA, report.ID
		})},
	}, nil
}
