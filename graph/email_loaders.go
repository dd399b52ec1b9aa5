package graph

import (
	"context"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/switchboard-dev/switchboard/domain/email"
)

// listedEmails records the received emails of one page (a mailbox, the
// account's emails, a thread), so that the attachments of all of them are
// read in one statement, whichever asks first.
func (l *loaders) listedEmails(page []email.Email) {
	var ids []string
	for _, e := range page {
		if e.Direction == email.Inbound && e.Attachments == nil {
			ids = append(ids, e.ID)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.emailSiblings[id] = ids
	}
}

func (l *loaders) loadAttachments(ctx context.Context, ids []string) []*dataloader.Result[[]email.Attachment] {
	if l.email == nil {
		return failAll[[]email.Attachment](len(ids), errNoEmail)
	}
	return readOnce(ctx, &l.mu, l.readAttachments, ids, withSiblings(&l.mu, l.emailSiblings, ids),
		func(owned []string) (map[string][]email.Attachment, error) {
			found, err := l.email.EmailAttachments(ctx, l.accountID, owned)
			for _, id := range owned {
				found[id] = orEmpty(found[id])
			}
			return found, err
		})
}
