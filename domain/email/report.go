package email

import "strings"

// DeliveryReport is what a delivery status notification (RFC 3464: a
// multipart/report of report-type delivery-status) says about an email
// sent earlier: which recipients it concerns and what happened to each.
type DeliveryReport struct {
	// ReportingMTA is the server that wrote the report ("dns;
	// mx.example.org" without its type).
	ReportingMTA string
	// OriginalMessageID is the Message-ID of the email it reports on,
	// read from the returned message or its headers; empty when the
	// report returned neither.
	OriginalMessageID string
	Recipients        []ReportedRecipient
}

// ReportedRecipient is one recipient of a delivery report.
type ReportedRecipient struct {
	// Address is the Final-Recipient (its address type stripped);
	// OriginalAddress the Original-Recipient where given.
	Address         string `json:"recipient"`
	OriginalAddress string `json:"original_recipient,omitempty"`
	// Action is failed, delayed, delivered, relayed or expanded.
	Action string `json:"action"`
	// Status is the RFC 3463 status code (5.1.1); DiagnosticCode the
	// remote server's reply (its type stripped: "550 5.1.1 User unknown").
	Status         string `json:"status"`
	DiagnosticCode string `json:"diagnostic_code,omitempty"`
}

// The report actions.
const (
	ActionFailed  = "failed"
	ActionDelayed = "delayed"
)

// Failed reports whether the delivery to r failed for good: a failed
// action (RFC 3464 2.3.3), or a permanent 5.x.x status with no action.
func (r ReportedRecipient) Failed() bool {
	if r.Action != "" {
		return strings.EqualFold(r.Action, ActionFailed)
	}
	return strings.HasPrefix(r.Status, "5.")
}

// Reason is why the delivery to r failed, as a person reads it: the
// remote server's reply, else the status code.
func (r ReportedRecipient) Reason() string {
	if r.DiagnosticCode != "" {
		return r.DiagnosticCode
	}
	return r.Status
}

// FailedRecipients are the recipients whose delivery failed for good.
func (d DeliveryReport) FailedRecipients() []ReportedRecipient {
	var out []ReportedRecipient
	for _, r := range d.Recipients {
		if r.Failed() {
			out = append(out, r)
		}
	}
	return out
}

// TypedValue is the value of a report field of the form "type; value"
// (rfc822; ann@example.org, smtp; 550 …, dns; mx.example.org) without its
// type; a value without a type is returned as it is.
func TypedValue(v string) string {
	if _, rest, ok := strings.Cut(v, ";"); ok {
		return strings.TrimSpace(rest)
	}
	return strings.TrimSpace(v)
}
