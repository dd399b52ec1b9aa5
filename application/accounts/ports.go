package accounts

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// Repos is the storage the account use cases read and write. Each method
// is atomic by itself: a write that needs its account checks that it
// exists in the same transaction.
//
// Errors: a lookup returns a failure of kind NotFound for a missing row and
// for a row of another account alike; an insert of a taken unique value
// returns one of kind Conflict (code "already_exists"); when the database
// is away, every method returns a failure of kind Unavailable. Other
// errors are infrastructure failures.
type Repos interface {
	// InsertAccount stores a new account with its credentials, all or
	// none. Conflict when the account's id or a credential's key hash is
	// taken.
	InsertAccount(ctx context.Context, a account.Account, credentials ...account.Credential) error
	// RenameAccount gives an account a new name, updated at at, moves its
	// version on, and returns it as stored. NotFound.
	RenameAccount(ctx context.Context, id, name string, at time.Time) (account.Account, error)
	// SetHistoryRetention gives an account its own history retention in
	// days (0: the server's), updated at at, moves its version on, and
	// returns it as stored. NotFound.
	SetHistoryRetention(ctx context.Context, id string, days int, at time.Time) (account.Account, error)
	// SetMessageRetention gives an account its message retention in days
	// (0: off), updated at at, moves its version on, and returns it as
	// stored. NotFound.
	SetMessageRetention(ctx context.Context, id string, days int, at time.Time) (account.Account, error)
	// Account reads an account. NotFound.
	Account(ctx context.Context, id string) (account.Account, error)
	// Accounts lists every account, oldest first.
	Accounts(ctx context.Context) ([]account.Account, error)
	// CountAccounts counts the accounts.
	CountAccounts(ctx context.Context) (int, error)

	// InsertCredential stores a new credential. NotFound when its account
	// does not exist; Conflict when its key hash is taken.
	InsertCredential(ctx context.Context, c account.Credential) error
	// CredentialByKeyHash finds a credential, revoked or not, by its
	// key's hash. NotFound. A cache in front of the database answers with
	// a credential it keeps only when accept(credential) is true; it
	// answers every other lookup by reading the database, so that a
	// lookup accept refuses costs one read whether the key was kept or
	// unknown. A store that keeps nothing ignores accept.
	CredentialByKeyHash(ctx context.Context, keyHash []byte, accept func(account.Credential) bool) (account.Credential, error)
	// Credential reads a credential of the account, revoked or not, by
	// its id. NotFound, for another account's credential too.
	Credential(ctx context.Context, accountID, id string) (account.Credential, error)
	// Credentials lists an account's credentials, revoked ones included.
	Credentials(ctx context.Context, accountID string) ([]account.Credential, error)
	// RevokeCredential revokes a credential of the account at at (a
	// second revocation keeps the first time) and returns it. NotFound.
	RevokeCredential(ctx context.Context, accountID, id string, at time.Time) (account.Credential, error)
	// RevokedSince lists the credentials revoked at or after since,
	// whatever their account, oldest revocation first.
	RevokedSince(ctx context.Context, since time.Time) ([]account.Credential, error)

	// InsertNumber stores a new agent number. NotFound when its account
	// does not exist; Conflict when the number is taken on its service,
	// on any account.
	InsertNumber(ctx context.Context, n account.Number) error
	// Numbers lists an account's numbers, oldest first.
	Numbers(ctx context.Context, accountID string) ([]account.Number, error)
	// SetNumberEnabled turns a number of the account on or off and
	// returns it. NotFound.
	SetNumberEnabled(ctx context.Context, accountID, id string, enabled bool) (account.Number, error)
	// SetNumberProfile sets the fields of the profile of a number of the
	// account that change names, at change.At, and returns the number.
	// NotFound.
	SetNumberProfile(ctx context.Context, accountID, id string, change account.ProfileChange) (account.Number, error)

	// InsertDomain stores a custom email domain. NotFound when its
	// account does not exist; Conflict when the domain is taken, on any
	// account.
	InsertDomain(ctx context.Context, d account.Domain) error
	// Domains lists an account's custom domains.
	Domains(ctx context.Context, accountID string) ([]account.Domain, error)

	// EmailAddresses lists an account's email addresses.
	EmailAddresses(ctx context.Context, accountID string) ([]account.EmailAddress, error)

	// Holdings reads what account a owns as of its version (a.Version),
	// which every change to the account or what it owns moves on in the
	// same transaction; a cache may answer for a version it has read.
	Holdings(ctx context.Context, a account.Account) (Holdings, error)
}

// Holdings are what an account owns that a client needs to start sending.
// They are shared between callers and must not be modified.
type Holdings struct {
	Numbers        []account.Number
	EmailAddresses []account.EmailAddress
	Domains        []account.Domain
}

// Store gives the use cases their repositories.
type Store interface {
	Repos() Repos
}

// Keyring derives the service's secrets from the server key: keyed hashes
// of credentials (the same purpose and value always hash the same) and
// authenticated encryption of provider settings, bound to a context (the
// number's id) so that a sealed value cannot be moved to another row.
type Keyring interface {
	Hash(purpose, value string) []byte
	Seal(plaintext []byte, context string) []byte
	// Open fails when the value was sealed with another key or context.
	Open(sealed []byte, context string) ([]byte, error)
}
