package messaging

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// StatusChange is one step of a message's life, as the account's event
// log recorded it: queued when the send was accepted, then sent,
// delivered, read or failed (with why); an inbound message was received.
type StatusChange struct {
	Status      messaging.Status
	At          time.Time
	FailureCode string
	FailureText string
}

// MaxTimelineEvents bounds the events one thread's timelines read; a
// message has a handful (queued, sent, delivered, read), so it is far
// more than a page of messages has.
const MaxTimelineEvents = 2000

// Timelines returns the status history of each of msgs (messages of the
// account, as read before), oldest step first, from the event log that
// webhooks deliver: one source of truth for the message.sent and
// message.status events a customer receives and the timeline a person
// reads. One statement per thread among msgs.
func (r *Reader) Timelines(ctx context.Context, accountID string, msgs []messaging.Message) (map[string][]StatusChange, error) {
	out := make(map[string][]StatusChange, len(msgs))
	byThread := map[string][]messaging.Message{}
	var threads []string
	for _, m := range msgs {
		if m.AccountID != accountID {
			continue
		}
		if m.Direction == messaging.Inbound {
			out[m.ID] = []StatusChange{{Status: messaging.Received, At: m.CreatedAt}}
			continue
		}
		if _, ok := byThread[m.ThreadID]; !ok {
			threads = append(threads, m.ThreadID)
		}
		byThread[m.ThreadID] = append(byThread[m.ThreadID], m)
	}
	for _, threadID := range threads {
		group := byThread[threadID]
		since := group[0].CreatedAt
		ids := make([]string, 0, len(group))
		for _, m := range group {
			if m.CreatedAt.Before(since) {
				since = m.CreatedAt
			}
			ids = append(ids, m.ID)
		}
		err := chunks(ids, func(part []string) error {
			events, err := r.repos.MessageEvents(ctx, accountID, threadID, part, since, MaxTimelineEvents)
			if err != nil {
				return err
			}
			for _, e := range events {
				if e.Type != event.MessageSent && e.Type != event.MessageStatus {
					continue
				}
				var p webhook.MessagePayload
				if json.Unmarshal(e.Payload, &p) != nil || !slices.Contains(part, p.MessageID) {
					continue
				}
				status := messaging.Status(p.Status)
				if e.Type == event.MessageSent {
					status = messaging.Queued
				}
				out[p.MessageID] = append(out[p.MessageID], StatusChange{Status: status, At: e.CreatedAt, FailureCode: p.ErrorCode, FailureText: p.ErrorMessage})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, m := range group {
			steps := out[m.ID]
			if len(steps) == 0 || steps[0].Status != messaging.Queued {
				// Every accepted send was queued first, whether or not its
				// event is still in the log.
				steps = append([]StatusChange{{Status: messaging.Queued, At: m.CreatedAt}}, steps...)
			}
			out[m.ID] = steps
		}
	}
	return out, nil
}
