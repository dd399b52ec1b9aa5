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
	r := s.store.Repos()
	d, err := r.MessageDetails(ctx, accountID, id)
	if err != nil {
		return MessageDetails{}, err
	}
	one := []messaging.Message{s.withMediaLink(d.Message)}
	if err := s.withReactions(ctx, r, accountID, one); err != nil {
		return MessageDetails{}, err
	}
	d.Message = one[0]
	return d, nil
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
	threads, total, err := s.store.Repos().Threads(ctx, q)
	for i := range threads {
		if last := threads[i].LastMessage; last != nil {
			linked := s.withMediaLink(*last)
			threads[i].LastMessage = &linked
		}
	}
	return threads, total, err
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
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		return s.withMediaLinks(msgs), s.withReactions(ctx, r, accountID, msgs)
	}
	if _, err := r.Thread(ctx, accountID, threadID); err != nil {
		return nil, err
	}
	return msgs, nil
}

// HistoryQuery asks for one page of a thread's messages.
type HistoryQuery struct {
	AccountID, ThreadID string
	// Limit is the page size: DefaultPageSize when 0 or less, at most
	// MaxPageSize (larger is clamped).
	Limit int
	// Before, when set, is the NextCursor of the page before: the page
	// then holds the messages older than that page's last one.
	Before string
}

// History returns one page of a thread's messages, newest first. Walking
// the pages by their NextCursor yields every message once: a page starts
// from a position in the order (creation time, then id), not at a count
// of messages, so messages that arrive meanwhile, newer than any position,
// shift no page.
//
// Errors: NotFound for a missing thread and another account's alike,
// whatever Before is; Invalid (on the query parameter "before") for a
// Before that is not a cursor of this thread.
func (s *Service) History(ctx context.Context, q HistoryQuery) (MessagePage, error) {
	if !ident.Valid(ident.Thread, q.ThreadID) {
		return MessagePage{}, failure.NotFound("thread")
	}
	r := s.store.Repos()
	var before *MessageCursor
	if q.Before != "" {
		c, err := ParseMessageCursor(q.ThreadID, q.Before, "before")
		if err != nil {
			// A thread the caller cannot see is not found whatever the
			// cursor, as without one.
			if _, threadErr := r.Thread(ctx, q.AccountID, q.ThreadID); threadErr != nil {
				return MessagePage{}, threadErr
			}
			return MessagePage{}, err
		}
		before = &c
	}
	limit := ClampPage(q.Limit)
	rows, err := r.ThreadMessages(ctx, q.AccountID, q.ThreadID, before, limit+1)
	if err != nil {
		return MessagePage{}, err
	}
	// As in Recent: messages found prove the thread is the account's.
	if len(rows) == 0 {
		if _, err := r.Thread(ctx, q.AccountID, q.ThreadID); err != nil {
			return MessagePage{}, err
		}
	}
	page := pageOf(q.ThreadID, s.withMediaLinks(rows), limit)
	return page, s.withReactions(ctx, r, q.AccountID, page.Messages)
}
