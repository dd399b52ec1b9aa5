package messaging

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Page limits of the pages of threads and messages: the GraphQL
// connections and the REST thread history.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	// MaxBatch bounds how many ids one statement takes; larger batches are
	// read in chunks.
	MaxBatch = 100
)

// ThreadFilter narrows a page of threads; zero fields match everything.
type ThreadFilter struct {
	Service account.Service
	Type    messaging.ThreadType
	// Phone keeps threads whose agent number, user or a participant is
	// this address.
	Phone string
}

// ThreadCursor is a position in the most-recently-active-first order of
// threads: the thread's last activity (its last message, or its creation)
// and its id.
type ThreadCursor struct {
	Activity time.Time
	ID       string
}

// ThreadPageQuery selects one page of an account's threads.
type ThreadPageQuery struct {
	AccountID string
	Filter    ThreadFilter
	// After, when set, starts the page after this position.
	After *ThreadCursor
	Limit int
}

// PagedThread is a thread with its position in the listing.
type PagedThread struct {
	Thread messaging.Thread
	Cursor ThreadCursor
}

// MessageCursor is a position in the newest-first order of a thread's
// messages.
type MessageCursor struct {
	CreatedAt time.Time
	ID        string
}

// PageRepos is the storage of the batched reads. Every method answers with
// one statement and sees only rows of accountID: ids of other accounts are
// simply absent from the result.
type PageRepos interface {
	// ThreadPage returns up to q.Limit threads in order.
	ThreadPage(ctx context.Context, q ThreadPageQuery) ([]PagedThread, error)
	ThreadsByID(ctx context.Context, accountID string, ids []string) ([]messaging.Thread, error)
	// ParticipantsOf returns the members of each thread, agent first, then
	// by address.
	ParticipantsOf(ctx context.Context, accountID string, threadIDs []string) (map[string][]messaging.Participant, error)
	// MessagePages returns, per thread, up to limit messages newest first,
	// older than before when it is set.
	MessagePages(ctx context.Context, accountID string, threadIDs []string, before *MessageCursor, limit int) (map[string][]messaging.Message, error)
	MessagesByID(ctx context.Context, accountID string, ids []string) ([]messaging.Message, error)
	// MessageEvents returns, oldest first, up to limit message.sent and
	// message.status events of the account's thread threadID about the
	// messages ids, recorded at or after since.
	MessageEvents(ctx context.Context, accountID, threadID string, ids []string, since time.Time, limit int) ([]event.Event, error)
	// Reactions returns the current reactions on the account's messages
	// ids, by message id (see Repos.Reactions).
	Reactions(ctx context.Context, accountID string, messageIDs []string) (map[string][]messaging.Reaction, error)
}

// Reader runs the paged and batched reads of threads and messages that the
// GraphQL API makes, so that a listing of many threads with their messages
// costs a fixed number of statements.
type Reader struct {
	repos PageRepos
	// links signs the media links of the messages read; nil leaves them
	// out.
	links *MediaLinks
}

// NewReader builds the batched reads over their storage.
func NewReader(r PageRepos) *Reader { return &Reader{repos: r} }

// WithMediaLinks is the reader that fills in the signed media links of
// the messages it reads (see messaging.Content's MediaURL).
func (r *Reader) WithMediaLinks(l *MediaLinks) *Reader { return &Reader{repos: r.repos, links: l} }

// linked is m with its media link filled in.
func (r *Reader) linked(m messaging.Message) messaging.Message {
	return r.links.filled(m, time.Now())
}

// ClampPage turns a requested page size into one within the limits.
func ClampPage(n int) int {
	if n <= 0 {
		return DefaultPageSize
	}
	return min(n, MaxPageSize)
}

// ThreadPage returns one page of the account's threads, most recently
// active first, and whether more follow.
func (r *Reader) ThreadPage(ctx context.Context, q ThreadPageQuery) ([]PagedThread, bool, error) {
	limit := ClampPage(q.Limit)
	q.Limit = limit + 1
	rows, err := r.repos.ThreadPage(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// Threads reads threads of the account by id; unknown ids and ids of other
// accounts are absent from the map.
func (r *Reader) Threads(ctx context.Context, accountID string, ids []string) (map[string]messaging.Thread, error) {
	ids = validIDs(ident.Thread, ids)
	out := make(map[string]messaging.Thread, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := chunks(ids, func(part []string) error {
		ts, err := r.repos.ThreadsByID(ctx, accountID, part)
		for _, t := range ts {
			out[t.ID] = t
		}
		return err
	})
	return out, err
}

// Participants reads the members of the account's threads.
func (r *Reader) Participants(ctx context.Context, accountID string, threadIDs []string) (map[string][]messaging.Participant, error) {
	threadIDs = validIDs(ident.Thread, threadIDs)
	out := make(map[string][]messaging.Participant, len(threadIDs))
	err := chunks(threadIDs, func(part []string) error {
		ps, err := r.repos.ParticipantsOf(ctx, accountID, part)
		for id, p := range ps {
			out[id] = p
		}
		return err
	})
	return out, err
}

// MessagePage is one page of a thread's messages, newest first.
type MessagePage struct {
	ThreadID string
	Messages []messaging.Message
	// HasMore says whether older messages follow.
	HasMore bool
}

// NextCursor is the token that asks for the page after p (the messages
// older than its last one); empty when p is the last page.
func (p MessagePage) NextCursor() string {
	if !p.HasMore || len(p.Messages) == 0 {
		return ""
	}
	return MessageCursorOf(p.Messages[len(p.Messages)-1]).Token(p.ThreadID)
}

// pageOf cuts rows, read with one more than limit, to a page of limit.
func pageOf(threadID string, rows []messaging.Message, limit int) MessagePage {
	if len(rows) > limit {
		return MessagePage{ThreadID: threadID, Messages: rows[:limit], HasMore: true}
	}
	return MessagePage{ThreadID: threadID, Messages: rows}
}

// MessagePages reads one page of messages for each of the account's
// threads, newest first, older than before when it is set.
func (r *Reader) MessagePages(ctx context.Context, accountID string, threadIDs []string, before *MessageCursor, limit int) (map[string]MessagePage, error) {
	threadIDs = validIDs(ident.Thread, threadIDs)
	out := make(map[string]MessagePage, len(threadIDs))
	if len(threadIDs) == 0 {
		return out, nil
	}
	limit = ClampPage(limit)
	err := chunks(threadIDs, func(part []string) error {
		rows, err := r.repos.MessagePages(ctx, accountID, part, before, limit+1)
		for id, msgs := range rows {
			for i := range msgs {
				msgs[i] = r.linked(msgs[i])
			}
			out[id] = pageOf(id, msgs, limit)
		}
		return err
	})
	return out, err
}

// Messages reads messages of the account by id.
func (r *Reader) Messages(ctx context.Context, accountID string, ids []string) (map[string]messaging.Message, error) {
	ids = validIDs(ident.Message, ids)
	out := make(map[string]messaging.Message, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := chunks(ids, func(part []string) error {
		ms, err := r.repos.MessagesByID(ctx, accountID, part)
		for _, m := range ms {
			out[m.ID] = r.linked(m)
		}
		return err
	})
	return out, err
}

// validIDs keeps the well-formed ids of a kind, once each; malformed ones
// cannot exist, so they need no lookup.
func validIDs(prefix string, ids []string) []string {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if ident.Valid(prefix, id) && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// chunks calls fn with ids in slices of at most MaxBatch.
func chunks(ids []string, fn func(part []string) error) error {
	for start := 0; start < len(ids); start += MaxBatch {
		if err := fn(ids[start:min(start+MaxBatch, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// Reactions reads the current reactions on the account's messages ids,
// in one statement per chunk of ids.
func (r *Reader) Reactions(ctx context.Context, accountID string, ids []string) (map[string][]messaging.Reaction, error) {
	out := map[string][]messaging.Reaction{}
	err := chunks(validIDs(ident.Message, ids), func(part []string) error {
		found, err := r.repos.Reactions(ctx, accountID, part)
		for id, rs := range found {
			out[id] = rs
		}
		return err
	})
	return out, err
}
