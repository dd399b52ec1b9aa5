package messaging

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Graphemes counts the user-perceived characters (grapheme clusters) of a
// string, as the providers count button titles.
type Graphemes interface {
	Graphemes(s string) int
}

// AcknowledgeKind is the job kind that acknowledges a user's report at
// the provider (Telegram's answerCallbackQuery for a button press), so
// that the user's app stops waiting.
const AcknowledgeKind = "message.acknowledge"

// Acknowledger is what a provider implements when its platform wants some
// inbound reports acknowledged: Telegram's callback queries.
//
// Errors: a *ProviderError for a failure the provider explained; ctx's
// error when ctx ends first.
type Acknowledger interface {
	// Acknowledge answers the report that became the inbound message
	// in.Message.
	Acknowledge(ctx context.Context, in InboundAck) error
}

// InboundAck is an inbound message whose report the provider wants
// acknowledged.
type InboundAck struct {
	Number account.Number
	// Settings are the number's opened provider settings.
	Settings map[string]string
	Message  messaging.Message
}

// acknowledgePayload is the acknowledgement job's payload.
type acknowledgePayload struct {
	MessageID string `json:"message_id"`
}

// acknowledgement is the job that acknowledges the report of the inbound
// message m from the number n.
func acknowledgement(n account.Number, m messaging.Message) (jobs.EnqueueParams, error) {
	payload, err := json.Marshal(acknowledgePayload{MessageID: m.ID})
	if err != nil {
		return jobs.EnqueueParams{}, err
	}
	return jobs.EnqueueParams{
		Kind: AcknowledgeKind, Payload: payload, PaceKey: PaceKey(n), MaxAttempts: DeliveryAttempts,
		AccountID: m.AccountID, EndpointKey: EndpointKey(n),
	}, nil
}

// pressedButton completes a button reply: the pressed button's title from
// the message it was on when the provider does not send it. A button
// reply the sandbox simulates must name a button of that message.
//
// Errors: Invalid (button_id) for a simulated press of a button the
// message does not have.
func pressedButton(ctx context.Context, tx TxReads, accountID string, reply messaging.Reply, in InboundInput) (messaging.Content, error) {
	c := in.Content
	if reply.MessageID == "" {
		return c, nil
	}
	m, err := tx.Message(ctx, accountID, reply.MessageID)
	if err != nil {
		return c, err
	}
	b, ok := m.Content.Button(c.ButtonID)
	switch {
	case ok && c.Text == "":
		c.Text = b.Title
	case !ok && in.ReplyTo.MessageID != "":
		return c, failure.Invalid(failure.Field("value_error", "the message has no button with this id", in.Fields.Path("button_id")...))
	}
	return c, nil
}

// Acknowledgements returns the worker of the acknowledgement jobs.
func (s *Service) Acknowledgements() AcknowledgementWorker { return AcknowledgementWorker{s: s} }

// AcknowledgementWorker acknowledges inbound reports at their providers:
// the handler of AcknowledgeKind jobs.
type AcknowledgementWorker struct{ s *Service }

// Work acknowledges the report of the job's inbound message. A message
// deleted with its account, or of a number gone or disabled, is left
// alone.
func (w AcknowledgementWorker) Work(ctx context.Context, job jobs.Job) error {
	s := w.s
	var p acknowledgePayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("acknowledgement payload: %w", err))
	}
	r := s.store.Repos()
	m, err := r.MessageByID(ctx, p.MessageID)
	if failure.Is(err, failure.KindNotFound) {
		return nil // deleted with its account
	}
	if err != nil {
		return err
	}
	number, err := jobNumber(ctx, r, m.AccountID, m.Service, m.To, "acknowledge "+p.MessageID)
	if err != nil {
		return err
	}
	provider, ok := s.providers.Provider(number.Provider)
	ack, can := provider.(Acknowledger)
	if !ok || !can {
		return nil // nothing to acknowledge on this provider
	}
	settings, err := s.opener.NumberSettings(number)
	if err != nil {
		return jobs.Permanent(err)
	}
	return providerOutcome(ack.Acknowledge(ctx, InboundAck{Number: number, Settings: settings, Message: m}))
}
