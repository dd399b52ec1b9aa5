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
	"encoding/hex"
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
		At:             s.now().UTC(),
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
