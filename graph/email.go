package graph

import (
	"context"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/queue"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// EmailReader reads the account's emails, mailboxes, email threads and
// the sandbox mailbox, as the console shows them, and answers emails;
// *email.Service implements it. Ids and addresses of other accounts are
// not found.
type EmailReader interface {
	Emails(ctx context.Context, accountID string, after *appemail.EmailCursor, limit int) ([]email.Email, bool, error)
	MailboxEmails(ctx context.Context, accountID, address string, after *appemail.EmailCursor, limit int) ([]email.Email, bool, error)
	EmailWithAttachments(ctx context.Context, accountID, id string) (email.Email, error)
	EmailAttachments(ctx context.Context, accountID string, emailIDs []string) (map[string][]email.Attachment, error)
	ThreadEmails(ctx context.Context, accountID, threadID string) ([]email.Email, error)
	Reply(ctx context.Context, in appemail.ReplyInput) (email.Email, error)
	Mailbox(ctx context.Context, accountID string, offset, limit int) (appemail.SandboxMailbox, error)
}

var _ EmailReader = (*appemail.Service)(nil)

// QueueHealthReader reads the health of an account's queue;
// *queue.Service implements it.
type QueueHealthReader interface {
	Health(ctx context.Context, accountID string) (queue.Health, error)
}

var _ QueueHealthReader = (*queue.Service)(nil)

// errNoEmail and errNoQueue answer the fields of an app built without
// them.
var (
	errNoEmail = &failure.Error{Kind: failure.KindNotImplemented, Code: "email_unavailable", Message: "email is not configured"}
	errNoQueue = &failure.Error{Kind: failure.KindNotImplemented, Code: "queue_unavailable", Message: "the job queue is not configured"}
)

// emailConnection builds a page of emails, newest first; their
// attachments are read together.
func emailConnection(ctx context.Context, page []email.Email, more bool) *model.EmailConnection {
	if l, err := loadersFor(ctx); err == nil {
		l.listedEmails(page)
	}
	c := &model.EmailConnection{
		Edges: make([]model.EmailEdge, len(page)), Nodes: page,
		PageInfo: &model.PageInfo{HasNextPage: more},
	}
	for i := range page {
		e := page[i]
		c.Edges[i] = model.EmailEdge{Cursor: encodeCursor("e", e.CreatedAt, e.ID), Node: &e}
	}
	if n := len(c.Edges); n > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[n-1].Cursor
	}
	return c
}

// orEmpty is s, or an empty list for a JSON array never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// emailCursor reads the after argument of an email listing.
func emailCursor(after *string) (*appemail.EmailCursor, error) {
	if after == nil {
		return nil, nil
	}
	at, id, err := decodeCursor("e", "after", *after)
	if err != nil {
		return nil, err
	}
	return &appemail.EmailCursor{CreatedAt: at, ID: id}, nil
}

// notFoundIsNull is v, or nil without an error when err is a not found:
// the answer of a field that is null for an id of another account.
func notFoundIsNull[T any](v T, err error) (*T, error) {
	if failure.Is(err, failure.KindNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}
