package messaging

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// RecentLimit is how many messages the recent-messages lookup returns.
const RecentLimit = 5

// List limits of the thread listings.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// MessageDetails is a message with its thread.
type MessageDetails struct {
	Message      messaging.Message
	Thread       messaging.Thread
	Participants []messaging.Participant
}

// Message reads one message of the account.
func (s *Service) Message(ctx context.Context, accountID, id string) (MessageDetails, error) {
	if !ident.Valid(ident.Message, id) {
		return MessageDetails{}, failure.NotFound("message")
	}
	return s.store.Repos().MessageDetails(ctx, accountID, id)
}

// ThreadDetails reads one thread of the account with its participants.
func (s *Service) ThreadDetails(ctx context.Context, accountID, id string) (messaging.Thread, []messaging.Participant, error) {
	r := s.store.Repos()
	t, err := s.thread(ctx, r, accountID, id)
	if err != nil {
		return messaging.Thread{}, nil, err
	}
	parts, err := r.Participants(ctx, t.ID)
	return t, parts, err
}

// Threads lists the account's threads, most recently active first.
func (s *Service) Threads(ctx context.Context, q ThreadQuery) ([]ThreadSummary, int, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultListLimit
	}
	q.Limit = min(q.Limit, MaxListLimit)
	q.Offset = max(q.Offset, 0)
	return s.store.Repos().Threads(ctx, q)
}

// Recent returns the newest messages of a thread, newest first.
//
// Messages exist only in their account's threads, so messages found prove
// the thread; only an empty answer needs the thread read (404 or empty).
func (s *Service) Recent(ctx context.Context, accountID, threadID string) ([]messaging.Message, error) {
	if !ident.Valid(ident.Thread, threadID) {
		return nil, failure.NotFound("thread")
	}
	r := s.store.Repos()
	msgs, err := r.RecentMessages(ctx, accountID, threadID, RecentLimit)
	if err != nil || len(msgs) > 0 {
		return msgs, err
	}
	if _, err := r.Thread(ctx, accountID, threadID); err != nil {
		return nil, err
	}
	return msgs, nil
}
