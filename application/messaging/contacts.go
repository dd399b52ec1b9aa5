package messaging

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// ContactPage is a page of an account's contacts, newest first; Next is
// the cursor of the next page, empty on the last.
type ContactPage struct {
	Contacts []messaging.Contact
	Next     string
}

// ContactDetails is a contact with its threads.
type ContactDetails struct {
	Contact messaging.Contact
	Threads []messaging.Thread
}

// A contact cursor is base64url of "c1|<contact id>": the page after it
// holds the contacts older than that one (ids start with their creation
// time).
const contactCursorVersion = "c1|"

// ContactCursor is the cursor of the page after the contact id.
func ContactCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(contactCursorVersion + id))
}

func parseContactCursor(token, field string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	id, ok := strings.CutPrefix(string(raw), contactCursorVersion)
	if err != nil || !ok || !ident.Valid(ident.Contact, id) {
		return "", failure.Invalid(failure.FieldError{In: "query", Path: []any{field}, Type: "value_error",
			Message: field + " is not a cursor the contact pages returned"})
	}
	return id, nil
}

// Contacts lists an account's contacts, newest first: limit 1 to
// MaxListLimit (DefaultListLimit when 0), after the cursor a previous
// page returned (named field in errors), those matching search.
func (s *Service) Contacts(ctx context.Context, accountID, search, cursor, field string, limit int) (ContactPage, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	q := ContactQuery{AccountID: accountID, Search: search, Limit: min(limit, MaxListLimit) + 1}
	if cursor != "" {
		before, err := parseContactCursor(cursor, field)
		if err != nil {
			return ContactPage{}, err
		}
		q.Before = before
	}
	list, err := s.store.Repos().Contacts(ctx, q)
	if err != nil {
		return ContactPage{}, err
	}
	page := ContactPage{Contacts: list}
	if len(list) == q.Limit {
		page.Contacts = list[:q.Limit-1]
		page.Next = ContactCursor(page.Contacts[len(page.Contacts)-1].ID)
	}
	return page, nil
}

// Contact reads a contact of the account with its threads. NotFound.
func (s *Service) Contact(ctx context.Context, accountID, id string) (ContactDetails, error) {
	if !ident.Valid(ident.Contact, id) {
		return ContactDetails{}, failure.NotFound("contact")
	}
	c, err := s.store.Repos().Contact(ctx, accountID, id)
	if err != nil {
		return ContactDetails{}, err
	}
	threads, err := s.store.Repos().ContactThreads(ctx, accountID, id)
	if err != nil {
		return ContactDetails{}, err
	}
	return ContactDetails{Contact: c, Threads: threads}, nil
}

// RenameContact sets a contact's display name (1 to 200 characters).
func (s *Service) RenameContact(ctx context.Context, accountID, id, name string) (ContactDetails, error) {
	err := s.decideContact(ctx, func(ctx context.Context, tx TxReads, now time.Time) (writes.Batch, error) {
		c, err := s.txContact(ctx, tx, accountID, id)
		if err != nil {
			return writes.Batch{}, err
		}
		if err := c.Rename(name, now); err != nil {
			return writes.Batch{}, err
		}
		return writes.Batch{Contacts: []writes.ContactWrite{{Contact: &c}}}, nil
	})
	if err != nil {
		return ContactDetails{}, err
	}
	return s.Contact(ctx, accountID, id)
}

// ErrMergeWithItself refuses merging a contact with itself.
var ErrMergeWithItself = failure.Invalid(failure.Field("value_error", "other_contact_id names the contact itself: merge two different contacts", "other_contact_id"))

// MergeContacts merges the account's contact other into id: id keeps its
// values and takes other's where it has none, other's phone numbers join
// its own, other's threads and messages become id's, and other is
// deleted. Merging a contact with itself is Invalid; either contact
// missing from the account is NotFound.
func (s *Service) MergeContacts(ctx context.Context, accountID, id, other string) (ContactDetails, error) {
	if id == other {
		return ContactDetails{}, ErrMergeWithItself
	}
	err := s.decideContact(ctx, func(ctx context.Context, tx TxReads, now time.Time) (writes.Batch, error) {
		into, err := s.txContact(ctx, tx, accountID, id)
		if err != nil {
			return writes.Batch{}, err
		}
		from, err := s.txContact(ctx, tx, accountID, other)
		if err != nil {
			return writes.Batch{}, err
		}
		into.Absorb(from, now)
		return writes.Batch{
			Contacts:      []writes.ContactWrite{{Contact: &into}},
			ContactMerges: []writes.ContactMerge{{AccountID: accountID, Into: into.ID, From: from.ID}},
		}, nil
	})
	if err != nil {
		return ContactDetails{}, err
	}
	return s.Contact(ctx, accountID, id)
}

func (s *Service) decideContact(ctx context.Context, decide func(ctx context.Context, tx TxReads, now time.Time) (writes.Batch, error)) error {
	return s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		return decide(ctx, tx, s.now().UTC().Truncate(time.Microsecond))
	})
}

func (s *Service) txContact(ctx context.Context, tx TxReads, accountID, id string) (messaging.Contact, error) {
	if !ident.Valid(ident.Contact, id) {
		return messaging.Contact{}, failure.NotFound("contact")
	}
	return tx.Contact(ctx, accountID, id)
}
