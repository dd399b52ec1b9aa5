package memory

import (
	"context"
	"slices"
	"strings"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

var (
	_ appemail.Repos = (*Repos)(nil)
)

// InsertEmailAddress stores an address; a taken local@domain is a Conflict.
func (r *Repos) InsertEmailAddress(ctx context.Context, a account.EmailAddress, customDomain bool) error {
	return r.write(ctx, func(t *tables) error {
		if customDomain && !slices.ContainsFunc(t.domainsOf(a.AccountID), func(d account.Domain) bool { return d.Name == a.Domain }) {
			return failure.NotFound("domain")
		}
		if _, ok := t.addresses[a.ID]; ok || t.addressOf(a.LocalPart, a.Domain) != nil {
			return taken("email address")
		}
		if err := t.needAccount(a.AccountID); err != nil {
			return err
		}
		a.CreatedAt = utc(a.CreatedAt)
		t.addresses[a.ID] = a
		t.touchAccount(a.AccountID)
		return nil
	})
}

func (t *tables) addressOf(localPart, domain string) *account.EmailAddress {
	for _, a := range t.addresses {
		if a.LocalPart == localPart && a.Domain == domain {
			return &a
		}
	}
	return nil
}

// EmailAddressByAddress finds an address of any account.
func (r *Repos) EmailAddressByAddress(ctx context.Context, localPart, domain string) (account.EmailAddress, error) {
	var out account.EmailAddress
	err := r.read(ctx, func(t *tables) error {
		a := t.addressOf(localPart, domain)
		if a == nil {
			return failure.NotFound("email address")
		}
		out = *a
		return nil
	})
	return out, err
}

// Email reads an email of an account.
func (r *Repos) Email(ctx context.Context, accountID, id string) (email.Email, error) {
	return r.email(ctx, id, func(e email.Email) bool { return e.AccountID == accountID })
}

// EmailByID reads an email of any account.
func (r *Repos) EmailByID(ctx context.Context, id string) (email.Email, error) {
	return r.email(ctx, id, func(email.Email) bool { return true })
}

func (r *Repos) email(ctx context.Context, id string, match func(email.Email) bool) (email.Email, error) {
	var out email.Email
	err := r.read(ctx, func(t *tables) error {
		e, ok := t.emails[id]
		if !ok || !match(e) {
			return failure.NotFound("email")
		}
		out = cloneEmail(e)
		return nil
	})
	return out, err
}

// recordEmailOutcome saves e's delivery if the stored email is still
// queued; any other is left as it is.
func (t *tables) recordEmailOutcome(e email.Email) {
	cur, ok := t.emails[e.ID]
	if !ok || cur.Status != email.Queued {
		return
	}
	cur.Status, cur.Reply, cur.FailureCode, cur.Attempts = e.Status, e.Reply, e.FailureCode, e.Attempts
	cur.SentAt, cur.UpdatedAt = utcPtr(e.SentAt), utc(e.UpdatedAt)
	t.emails[e.ID] = cur
}

// EmailStore is the email use cases' store (email.Store), as store.DB.EmailStore is.
func (db *DB) EmailStore() appemail.Store {
	return bound[appemail.Repos]{db: db, view: func(r *Repos) appemail.Repos { return r }}
}

// Emails reads up to limit of the account's emails, newest first, after
// the position after when it is set.
func (r *Repos) Emails(ctx context.Context, accountID string, after *appemail.EmailCursor, limit int) ([]email.Email, error) {
	var out []email.Email
	err := r.read(ctx, func(t *tables) error {
		newest := func(a, b email.Email) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		}
		rows := sorted(t.emails, func(e email.Email) bool {
			if e.AccountID != accountID {
				return false
			}
			return after == nil || e.CreatedAt.Before(after.CreatedAt) || (e.CreatedAt.Equal(after.CreatedAt) && e.ID < after.ID)
		}, newest)
		rows = window(rows, 0, unbounded(limit))
		out = make([]email.Email, len(rows))
		for i, e := range rows {
			out[i] = cloneEmail(e)
		}
		return nil
	})
	return out, err
}
