package accounts

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// Repos is the storage the account use cases read and write. Methods return
// *failure.Error values of kind NotFound (missing row, or a row of another
// account) and Conflict (a unique value taken, code "already_exists"); any
// other error is an infrastructure failure.
type Repos interface {
	InsertAccount(ctx context.Context, a account.Account) error
	UpdateAccount(ctx context.Context, a account.Account) error
	Account(ctx context.Context, id string) (account.Account, error)
	Accounts(ctx context.Context) ([]account.Account, error)
	CountAccounts(ctx context.Context) (int, error)

	InsertCredential(ctx context.Context, c account.Credential) error
	CredentialByKeyHash(ctx context.Context, keyHash []byte) (account.Credential, error)
	Credentials(ctx context.Context, accountID string) ([]account.Credential, error)
	RevokeCredential(ctx context.Context, accountID, id string, at time.Time) (account.Credential, error)
	// RevokedSince lists the credentials revoked at or after since,
	// whatever their account, oldest revocation first.
	RevokedSince(ctx context.Context, since time.Time) ([]account.Credential, error)

	InsertNumber(ctx context.Context, n account.Number) error
	Numbers(ctx context.Context, accountID string) ([]account.Number, error)
	SetNumberEnabled(ctx context.Context, accountID, id string, enabled bool) (account.Number, error)

	InsertDomain(ctx context.Context, d account.Domain) error
	Domains(ctx context.Context, accountID string) ([]account.Domain, error)

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

// Store gives the use cases their repositories, either directly (each call
// its own statement) or inside one transaction that commits only if fn
// returns nil.
type Store interface {
	Repos() Repos
	Transact(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
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
