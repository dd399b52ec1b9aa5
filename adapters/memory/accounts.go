package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

var (
	_ accounts.Repos = (*Repos)(nil)
)

// touchAccount moves an account's version on: what the SQL store's
// triggers do when a number, domain or email address of it changes.
func (t *tables) touchAccount(id string) {
	if a, ok := t.accounts[id]; ok {
		a.Version++
		t.accounts[id] = a
	}
}

// sorted returns the rows of m that keep says, in the order of cmp.
func sorted[K comparable, V any](m map[K]V, keep func(V) bool, order func(a, b V) int) []V {
	out := make([]V, 0)
	for _, v := range m {
		if keep(v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, order)
	return out
}

// byCreation orders rows by creation time, then id.
func byCreation[T any](created func(T) (time.Time, string)) func(a, b T) int {
	return func(a, b T) int {
		at, aid := created(a)
		bt, bid := created(b)
		return cmp.Or(at.Compare(bt), strings.Compare(aid, bid))
	}
}

// mapped returns f of each row.
func mapped[T, U any](rows []T, f func(T) U) []U {
	out := make([]U, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// InsertAccount stores a new account.
func (r *Repos) InsertAccount(ctx context.Context, a account.Account, credentials ...account.Credential) error {
	return r.write(ctx, func(t *tables) error {
		if _, ok := t.accounts[a.ID]; ok {
			return taken("account")
		}
		t.accounts[a.ID] = cloneAccount(a)
		for _, c := range credentials {
			if _, ok := t.credentials[c.ID]; ok || t.credentialByHash(c.KeyHash) != nil {
				return taken("credential")
			}
			t.credentials[c.ID] = cloneCredential(c)
		}
		return nil
	})
}

// RenameAccount saves an account's name and time, moves its version on
// and returns it.
func (r *Repos) RenameAccount(ctx context.Context, id, name string, at time.Time) (account.Account, error) {
	var out account.Account
	err := r.write(ctx, func(t *tables) error {
		cur, ok := t.accounts[id]
		if !ok {
			return failure.NotFound("account")
		}
		cur.Name, cur.UpdatedAt = name, utc(at)
		cur.Version++
		t.accounts[id] = cur
		out = cloneAccount(cur)
		return nil
	})
	return out, err
}

// Account reads one account.
func (r *Repos) Account(ctx context.Context, id string) (account.Account, error) {
	var out account.Account
	err := r.read(ctx, func(t *tables) error {
		a, ok := t.accounts[id]
		if !ok {
			return failure.NotFound("account")
		}
		out = cloneAccount(a)
		return nil
	})
	return out, err
}

// Accounts lists every account, oldest first.
func (r *Repos) Accounts(ctx context.Context) ([]account.Account, error) {
	var out []account.Account
	err := r.read(ctx, func(t *tables) error {
		out = mapped(sorted(t.accounts, func(account.Account) bool { return true },
			byCreation(func(a account.Account) (time.Time, string) { return a.CreatedAt, a.ID })), cloneAccount)
		return nil
	})
	return out, err
}

// CountAccounts counts accounts.
func (r *Repos) CountAccounts(ctx context.Context) (int, error) {
	var n int
	err := r.read(ctx, func(t *tables) error { n = len(t.accounts); return nil })
	return n, err
}

// InsertCredential stores a new credential; its id and key hash are unique.
func (r *Repos) InsertCredential(ctx context.Context, c account.Credential) error {
	return r.write(ctx, func(t *tables) error {
		if _, ok := t.accounts[c.AccountID]; !ok {
			return failure.NotFound("account")
		}
		if _, ok := t.credentials[c.ID]; ok || t.credentialByHash(c.KeyHash) != nil {
			return taken("credential")
		}
		if err := t.needAccount(c.AccountID); err != nil {
			return err
		}
		t.credentials[c.ID] = cloneCredential(c)
		return nil
	})
}

func (t *tables) credentialByHash(hash []byte) *account.Credential {
	for _, c := range t.credentials {
		if bytes.Equal(c.KeyHash, hash) {
			return &c
		}
	}
	return nil
}

// CredentialByKeyHash finds the credential whose key hashes to keyHash;
// it keeps nothing, so it has no use for accept.
func (r *Repos) CredentialByKeyHash(ctx context.Context, keyHash []byte, _ func(account.Credential) bool) (account.Credential, error) {
	var out account.Credential
	err := r.read(ctx, func(t *tables) error {
		c := t.credentialByHash(keyHash)
		if c == nil {
			return failure.NotFound("credential")
		}
		out = cloneCredential(*c)
		return nil
	})
	return out, err
}

// Credential reads a credential of the account by its id.
func (r *Repos) Credential(ctx context.Context, accountID, id string) (account.Credential, error) {
	var out account.Credential
	err := r.read(ctx, func(t *tables) error {
		c, ok := t.credentials[id]
		if !ok || c.AccountID != accountID {
			return failure.NotFound("credential")
		}
		out = cloneCredential(c)
		return nil
	})
	return out, err
}

// Credentials lists an account's credentials, oldest first.
func (r *Repos) Credentials(ctx context.Context, accountID string) ([]account.Credential, error) {
	var out []account.Credential
	err := r.read(ctx, func(t *tables) error {
		out = mapped(sorted(t.credentials, func(c account.Credential) bool { return c.AccountID == accountID },
			byCreation(func(c account.Credential) (time.Time, string) { return c.CreatedAt, c.ID })), cloneCredential)
		return nil
	})
	return out, err
}

// RevokeCredential marks a credential revoked, keeping an earlier
// revocation time, and returns it.
func (r *Repos) RevokeCredential(ctx context.Context, accountID, id string, at time.Time) (account.Credential, error) {
	var out account.Credential
	err := r.write(ctx, func(t *tables) error {
		c, ok := t.credentials[id]
		if !ok || c.AccountID != accountID {
			return failure.NotFound("credential")
		}
		if c.RevokedAt == nil {
			c.RevokedAt = utcPtr(&at)
			t.credentials[id] = c
		}
		out = cloneCredential(c)
		return nil
	})
	return out, err
}

// RevokedSince lists the credentials revoked at or after since, oldest
// revocation first.
func (r *Repos) RevokedSince(ctx context.Context, since time.Time) ([]account.Credential, error) {
	var out []account.Credential
	err := r.read(ctx, func(t *tables) error {
		out = mapped(sorted(t.credentials, func(c account.Credential) bool { return c.RevokedAt != nil && !c.RevokedAt.Before(since) },
			byCreation(func(c account.Credential) (time.Time, string) { return *c.RevokedAt, c.ID })), cloneCredential)
		return nil
	})
	return out, err
}

// InsertNumber stores a new agent number; a number is unique per service.
func (r *Repos) InsertNumber(ctx context.Context, n account.Number) error {
	return r.write(ctx, func(t *tables) error {
		if _, ok := t.accounts[n.AccountID]; !ok {
			return failure.NotFound("account")
		}
		if _, ok := t.numbers[n.ID]; ok || t.numberByAddress(n.Service, n.Number) != nil {
			return taken("number")
		}
		if err := t.needAccount(n.AccountID); err != nil {
			return err
		}
		t.numbers[n.ID] = cloneNumber(n)
		t.touchAccount(n.AccountID)
		return nil
	})
}

func (t *tables) numberByAddress(service account.Service, number string) *account.Number {
	for _, n := range t.numbers {
		if n.Service == service && n.Number == number {
			return &n
		}
	}
	return nil
}

// numbersWhere lists the numbers keep says, oldest first.
func (t *tables) numbersWhere(keep func(account.Number) bool) []account.Number {
	return mapped(sorted(t.numbers, keep,
		byCreation(func(n account.Number) (time.Time, string) { return n.CreatedAt, n.ID })), cloneNumber)
}

// Numbers lists an account's numbers, oldest first.
func (r *Repos) Numbers(ctx context.Context, accountID string) ([]account.Number, error) {
	var out []account.Number
	err := r.read(ctx, func(t *tables) error {
		out = t.numbersWhere(func(n account.Number) bool { return n.AccountID == accountID })
		return nil
	})
	return out, err
}

// SetNumberEnabled turns a number of the account on or off and returns it.
func (r *Repos) SetNumberEnabled(ctx context.Context, accountID, id string, enabled bool) (account.Number, error) {
	var out account.Number
	err := r.write(ctx, func(t *tables) error {
		n, ok := t.numbers[id]
		if !ok || n.AccountID != accountID {
			return failure.NotFound("number")
		}
		n.Enabled = enabled
		t.numbers[id] = n
		t.touchAccount(accountID)
		out = cloneNumber(n)
		return nil
	})
	return out, err
}

// InsertDomain stores a custom email domain; a name is unique.
func (r *Repos) InsertDomain(ctx context.Context, d account.Domain) error {
	return r.write(ctx, func(t *tables) error {
		if _, ok := t.accounts[d.AccountID]; !ok {
			return failure.NotFound("account")
		}
		if _, ok := t.domains[d.ID]; ok {
			return taken("domain")
		}
		for _, o := range t.domains {
			if o.Name == d.Name {
				return taken("domain")
			}
		}
		if err := t.needAccount(d.AccountID); err != nil {
			return err
		}
		d.CreatedAt = utc(d.CreatedAt)
		t.domains[d.ID] = d
		t.touchAccount(d.AccountID)
		return nil
	})
}

// Domains lists an account's custom domains by name.
func (r *Repos) Domains(ctx context.Context, accountID string) ([]account.Domain, error) {
	var out []account.Domain
	err := r.read(ctx, func(t *tables) error { out = t.domainsOf(accountID); return nil })
	return out, err
}

func (t *tables) domainsOf(accountID string) []account.Domain {
	return sorted(t.domains, func(d account.Domain) bool { return d.AccountID == accountID },
		func(a, b account.Domain) int { return strings.Compare(a.Name, b.Name) })
}

// EmailAddresses lists an account's email addresses, oldest first.
func (r *Repos) EmailAddresses(ctx context.Context, accountID string) ([]account.EmailAddress, error) {
	var out []account.EmailAddress
	err := r.read(ctx, func(t *tables) error { out = t.addressesOf(accountID); return nil })
	return out, err
}

func (t *tables) addressesOf(accountID string) []account.EmailAddress {
	return sorted(t.addresses, func(a account.EmailAddress) bool { return a.AccountID == accountID },
		byCreation(func(a account.EmailAddress) (time.Time, string) { return a.CreatedAt, a.ID }))
}

// Holdings reads what an account owns now, from one state of the tables.
func (r *Repos) Holdings(ctx context.Context, a account.Account) (accounts.Holdings, error) {
	var h accounts.Holdings
	err := r.read(ctx, func(t *tables) error {
		h = accounts.Holdings{
			Numbers:        t.numbersWhere(func(n account.Number) bool { return n.AccountID == a.ID }),
			EmailAddresses: t.addressesOf(a.ID),
			Domains:        t.domainsOf(a.ID),
		}
		return nil
	})
	return h, err
}

// AccountStore is the account use cases' store (accounts.Store), as store.DB.AccountStore is.
func (db *DB) AccountStore() accounts.Store {
	return bound[accounts.Repos]{db: db, view: func(r *Repos) accounts.Repos { return r }}
}
