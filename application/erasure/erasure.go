// Package erasure erases one person of an account (domain/erasure): the
// operator (CLI) or the account itself (REST, GraphQL) names them by a
// contact id, a phone number, a provider user id or an email address, and
// everything stored about them is deleted in one transaction, with the
// audit record of the erasure.
//
// Erasing is idempotent: a person erased again has nothing left, and the
// second record counts nothing. A contact id that the account never had
// (nor erased) is NotFound, as any unknown id is; a phone number, user id
// or email address is not an object of the service, so one nothing is
// stored about is erased with zero counts (and recorded), whichever
// account asks. Deliveries still pending and queued sends that carry the
// person go with their rows: their jobs find nothing left and do nothing.
package erasure

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// TxReads are the reads an erasure makes inside its transaction.
type TxReads interface {
	// ErasureTarget finds everything stored about the person id names in
	// the account (erasure.Target), with the rows of each table that
	// would go.
	ErasureTarget(ctx context.Context, accountID string, id erasure.Identifier) (erasure.Target, error)
	// Erased tells whether the account erased the identifier of this
	// keyed hash before.
	Erased(ctx context.Context, accountID, identifierHash string) (bool, error)
}

// Store is the storage of erasures.
//
// Errors: when the database is away, every method returns a failure of
// kind Unavailable; other errors are infrastructure failures.
type Store interface {
	// Decide runs decide in a transaction, reading through tx, and
	// writes the batch it returns there (writes.Batch.Erasures). When
	// decide fails, nothing is written and Decide returns its error.
	Decide(ctx context.Context, decide func(ctx context.Context, tx TxReads) (writes.Batch, error)) error
	// Records lists the account's audit records newest first (by time,
	// then id): at most q.Limit, those after q.After in that order when it
	// is set.
	Records(ctx context.Context, q Query) ([]erasure.Record, error)
}

// Query selects a page of an account's audit records.
type Query struct {
	AccountID string
	After     *Position
	Limit     int
}

// Position is a record's place in the newest-first order of the records.
type Position struct {
	At time.Time
	ID string
}

// Keyring hashes identifiers for the audit record (keyring.Keyring).
type Keyring interface {
	Hash(purpose, value string) []byte
}

// hashPurpose separates the identifiers' hashes from the keyring's other
// hashes.
const hashPurpose = "erasure-identifier"

// Service erases people.
type Service struct {
	store Store
	keys  Keyring
	now   func() time.Time
}

// New builds the service; now is time.Now when nil.
func New(store Store, keys Keyring, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, keys: keys, now: now}
}

// Request asks for the erasure of one person of an account.
type Request struct {
	AccountID string
	ID        erasure.Identifier
	// RequestedBy is who asks (erasure.Record.RequestedBy).
	RequestedBy string
	// KindPath and ValuePath name the identifier's fields in errors.
	KindPath, ValuePath []any
}

// Erase deletes everything stored about the person and returns the audit
// record, which counts what went. Invalid for an identifier that does not
// fit its kind; NotFound for a contact id the account never had and never
// erased.
func (s *Service) Erase(ctx context.Context, req Request) (erasure.Record, error) {
	id := req.ID.Normalized()
	if err := id.Check(req.KindPath, req.ValuePath); err != nil {
		return erasure.Record{}, err
	}
	if !ident.Valid(ident.Account, req.AccountID) {
		return erasure.Record{}, failure.NotFound("account")
	}
	record := erasure.Record{
		ID:             ident.New(ident.Erasure),
		AccountID:      req.AccountID,
		RequestedBy:    req.RequestedBy,
		Kind:           id.Kind,
		IdentifierHash: s.Hash(id),
		At:             s.now().UTC().Truncate(time.Microsecond), // as stored
	}
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		target, err := tx.ErasureTarget(ctx, req.AccountID, id)
		if err != nil {
			return writes.Batch{}, err
		}
		if id.Kind == erasure.Contact && !target.Found {
			erased, err := tx.Erased(ctx, req.AccountID, record.IdentifierHash)
			if err != nil {
				return writes.Batch{}, err
			}
			if !erased {
				return writes.Batch{}, failure.NotFound("contact")
			}
		}
		record.Counts = map[string]int{}
		for table, n := range target.Counts {
			if n > 0 {
				record.Counts[table] = n
			}
		}
		return writes.Batch{Erasures: []writes.Erasure{{Record: record, Target: target}}}, nil
	})
	if err != nil {
		return erasure.Record{}, err
	}
	return record, nil
}

// Hash is the keyed hash the audit record knows id by (normalized): the
// same identifier erased twice hashes alike, and the hash tells nothing
// without the server key.
func (s *Service) Hash(id erasure.Identifier) string {
	id = id.Normalized()
	return hex.EncodeToString(s.keys.Hash(hashPurpose, string(id.Kind)+":"+id.Value))
}

// The page sizes of Records.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Page is a page of an account's audit records, newest first; Next is the
// cursor of the page after it, empty on the last.
type Page struct {
	Records []erasure.Record
	Next    string
}

// A record cursor is base64url of "e1|<time, RFC 3339 with nanoseconds>|<erasure
// id>": the page after it holds the records older than that one. It grants
// nothing: every page is read within the account the request names.
const cursorVersion = "e1"

// Cursor is the cursor of the page after r.
func Cursor(r erasure.Record) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + "|" + r.At.UTC().Format(time.RFC3339Nano) + "|" + r.ID))
}

// parseCursor reads a Cursor; Invalid on the parameter field otherwise.
func parseCursor(token, field string) (Position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	parts := strings.Split(string(raw), "|")
	if err == nil && len(parts) == 3 && parts[0] == cursorVersion && ident.Valid(ident.Erasure, parts[2]) {
		if at, err := time.Parse(time.RFC3339Nano, parts[1]); err == nil {
			return Position{At: at, ID: parts[2]}, nil
		}
	}
	return Position{}, failure.Invalid(failure.FieldError{In: "query", Path: []any{field}, Type: "value_error",
		Message: field + " is not a cursor the erasure pages returned"})
}

// Records lists the account's audit records, newest first: limit 1 to
// MaxPageSize (DefaultPageSize when 0), after the cursor a previous page
// returned (named field in errors).
func (s *Service) Records(ctx context.Context, accountID, cursor, field string, limit int) (Page, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	if !ident.Valid(ident.Account, accountID) {
		return Page{}, failure.NotFound("account")
	}
	q := Query{AccountID: accountID, Limit: min(limit, MaxPageSize) + 1}
	if cursor != "" {
		after, err := parseCursor(cursor, field)
		if err != nil {
			return Page{}, err
		}
		q.After = &after
	}
	list, err := s.store.Records(ctx, q)
	if err != nil {
		return Page{}, err
	}
	page := Page{Records: list}
	if len(list) == q.Limit {
		page.Records = list[:q.Limit-1]
		page.Next = Cursor(page.Records[len(page.Records)-1])
	}
	return page, nil
}
