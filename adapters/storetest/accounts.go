// Package storetest is the storage contract suite: the behaviour every
// adapter of the application's store ports must have, written once and run
// against each adapter (SQLite and Postgres) from that adapter's tests.
package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// at is a fixed instant with microsecond precision, which every dialect
// stores exactly.
var at = time.Date(2026, 11, 22, 10, 30, 15, 123456000, time.UTC)

func newAccount(name string) account.Account {
	return account.Account{ID: ident.New(ident.Account), Name: name, CreatedAt: at, UpdatedAt: at}
}

func newCredential(accountID string, seed byte) account.Credential {
	return account.Credential{
		ID: ident.New(ident.Credential), AccountID: accountID, Label: "default", KeyPrefix: "swk_abcdef",
		KeyHash: []byte{seed, 1, 2, 3, seed}, SecretHash: []byte{seed, 9, 9}, CreatedAt: at,
	}
}

// accountsWithNumber stores two accounts, the first with a sandbox number
// on service, and returns them and the number.
func accountsWithNumber(t *testing.T, s accounts.Store, service account.Service) (account.Account, account.Account, account.Number) {
	t.Helper()
	ctx := context.Background()
	a, other := newAccount("A"), newAccount("B")
	require.NoError(t, s.Repos().InsertAccount(ctx, a))
	require.NoError(t, s.Repos().InsertAccount(ctx, other))
	n := account.Number{
		ID: ident.New(ident.Number), AccountID: a.ID, Number: "+14155550100", Service: service,
		Provider: account.ProviderSandbox, SealedSettings: []byte{1, 2}, Enabled: true, CreatedAt: at,
	}
	require.NoError(t, s.Repos().InsertNumber(ctx, n))
	return a, other, n
}

// Accounts runs the contract of accounts.Store against the store that open
// returns; open must give each call its own empty, migrated database.
func Accounts(t *testing.T, open func(t *testing.T) accounts.Store) {
	t.Run("AccountRoundTrip", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a := newAccount("Acme")
		require.NoError(t, s.Repos().InsertAccount(ctx, a))

		got, err := s.Repos().Account(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, a, got)

		a.Name, a.UpdatedAt = "Acme 2", at.Add(time.Hour)
		renamed, err := s.Repos().RenameAccount(ctx, a.ID, a.Name, a.UpdatedAt)
		require.NoError(t, err)
		a.Version++
		require.Equal(t, a, renamed, "a rename moves the version on and returns the account as stored")
		got, err = s.Repos().Account(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, a, got)

		a.HistoryRetentionDays, a.UpdatedAt = 3650, at.Add(2*time.Hour)
		kept, err := s.Repos().SetHistoryRetention(ctx, a.ID, a.HistoryRetentionDays, a.UpdatedAt)
		require.NoError(t, err)
		a.Version++
		require.Equal(t, a, kept, "a history retention moves the version on and returns the account as stored")
		got, err = s.Repos().Account(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, a, got)
		a.HistoryRetentionDays, a.UpdatedAt = 0, at.Add(3*time.Hour)
		kept, err = s.Repos().SetHistoryRetention(ctx, a.ID, 0, a.UpdatedAt)
		require.NoError(t, err)
		a.Version++
		require.Equal(t, a, kept, "0 gives the account the server's period again")

		n, err := s.Repos().CountAccounts(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})

	t.Run("MissingRowsAreNotFound", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		_, err := s.Repos().Account(ctx, "acc_missing")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		_, err = s.Repos().RenameAccount(ctx, "acc_ghost", "ghost", at)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		_, err = s.Repos().SetHistoryRetention(ctx, "acc_ghost", 90, at)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		err = s.Repos().InsertCredential(ctx, newCredential("acc_ghost", 7))
		require.True(t, failure.Is(err, failure.KindNotFound), "a credential needs its account, got %v", err)
		err = s.Repos().InsertNumber(ctx, account.Number{ID: ident.New(ident.Number), AccountID: "acc_ghost", Number: "+14155550177",
			Service: account.WhatsApp, Provider: account.ProviderSandbox, SealedSettings: []byte{1}, CreatedAt: at})
		require.True(t, failure.Is(err, failure.KindNotFound), "a number needs its account, got %v", err)
		err = s.Repos().InsertDomain(ctx, account.Domain{ID: ident.New(ident.Domain), AccountID: "acc_ghost", Name: "ghost.example.com", CreatedAt: at})
		require.True(t, failure.Is(err, failure.KindNotFound), "a domain needs its account, got %v", err)
		_, err = s.Repos().CredentialByKeyHash(ctx, []byte{1}, nil)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		_, err = s.Repos().RevokeCredential(ctx, "acc_x", "key_x", at)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		_, err = s.Repos().SetNumberEnabled(ctx, "acc_x", "num_x", false)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	})

	t.Run("DuplicateIDIsConflict", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a := newAccount("Acme")
		require.NoError(t, s.Repos().InsertAccount(ctx, a))
		err := s.Repos().InsertAccount(ctx, a)
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
	})

	t.Run("Credentials", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, other := newAccount("A"), newAccount("B")
		require.NoError(t, s.Repos().InsertAccount(ctx, a))
		require.NoError(t, s.Repos().InsertAccount(ctx, other))
		c1, c2 := newCredential(a.ID, 1), newCredential(a.ID, 2)
		c2.CreatedAt = at.Add(time.Second)
		require.NoError(t, s.Repos().InsertCredential(ctx, c1))
		require.NoError(t, s.Repos().InsertCredential(ctx, c2))

		dup := newCredential(other.ID, 1)
		err := s.Repos().InsertCredential(ctx, dup)
		require.True(t, failure.Is(err, failure.KindConflict), "a key hash is unique across accounts, got %v", err)

		got, err := s.Repos().CredentialByKeyHash(ctx, c1.KeyHash, nil)
		require.NoError(t, err)
		require.Equal(t, c1, got)
		got, err = s.Repos().Credential(ctx, a.ID, c2.ID)
		require.NoError(t, err)
		require.Equal(t, c2, got)
		_, err = s.Repos().Credential(ctx, other.ID, c2.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's credential must look missing, got %v", err)
		_, err = s.Repos().Credential(ctx, a.ID, "key_missing")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

		list, err := s.Repos().Credentials(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, []account.Credential{c1, c2}, list)

		_, err = s.Repos().RevokeCredential(ctx, other.ID, c1.ID, at)
		require.True(t, failure.Is(err, failure.KindNotFound), "revoking through another account must look like a missing key, got %v", err)

		revoked, err := s.Repos().RevokeCredential(ctx, a.ID, c1.ID, at.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, revoked.Revoked())
		again, err := s.Repos().RevokeCredential(ctx, a.ID, c1.ID, at.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, at.Add(time.Minute), *again.RevokedAt, "the first revocation time is kept")
		byID, err := s.Repos().Credential(ctx, a.ID, c1.ID)
		require.NoError(t, err)
		require.True(t, byID.Revoked(), "a revoked credential is still read by id")

		since, err := s.Repos().RevokedSince(ctx, at.Add(time.Minute))
		require.NoError(t, err)
		require.Len(t, since, 1, "a revocation at the bound is listed; unrevoked keys never are")
		require.Equal(t, c1.KeyHash, since[0].KeyHash)
		since, err = s.Repos().RevokedSince(ctx, at.Add(time.Minute+time.Millisecond))
		require.NoError(t, err)
		require.Empty(t, since, "nothing was revoked after the bound")
	})

	t.Run("Numbers", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, other, n := accountsWithNumber(t, s, account.WhatsApp)

		same := n
		same.ID, same.AccountID = ident.New(ident.Number), other.ID
		err := s.Repos().InsertNumber(ctx, same)
		require.True(t, failure.Is(err, failure.KindConflict), "a number is unique per service, got %v", err)

		tg := same
		tg.Service = account.Telegram
		require.NoError(t, s.Repos().InsertNumber(ctx, tg), "the same number on another service is another agent")

		list, err := s.Repos().Numbers(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, []account.Number{n}, list)

		_, err = s.Repos().SetNumberEnabled(ctx, other.ID, n.ID, false)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		disabled, err := s.Repos().SetNumberEnabled(ctx, a.ID, n.ID, false)
		require.NoError(t, err)
		require.False(t, disabled.Enabled)
	})

	t.Run("NumberProfiles", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, other, n := accountsWithNumber(t, s, account.Telegram)
		list, err := s.Repos().Numbers(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, account.Profile{}, list[0].Profile, "a new number has no profile")

		name, picture := "Ada Support", "https://files.example.com/ada.png"
		_, err = s.Repos().SetNumberProfile(ctx, other.ID, n.ID, account.ProfileChange{Name: &name, At: at})
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's number, got %v", err)
		named, err := s.Repos().SetNumberProfile(ctx, a.ID, n.ID, account.ProfileChange{Name: &name, At: at})
		require.NoError(t, err)
		stamp := at
		require.Equal(t, account.Profile{Name: name, UpdatedAt: &stamp}, named.Profile)

		later := at.Add(time.Minute)
		pictured, err := s.Repos().SetNumberProfile(ctx, a.ID, n.ID, account.ProfileChange{PictureURL: &picture, At: later})
		require.NoError(t, err)
		require.Equal(t, account.Profile{Name: name, PictureURL: picture, UpdatedAt: &later}, pictured.Profile, "the name is kept")
		list, err = s.Repos().Numbers(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, []account.Number{pictured}, list, "read back as stored")
	})

	t.Run("DomainsAndAddresses", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, other := newAccount("A"), newAccount("B")
		require.NoError(t, s.Repos().InsertAccount(ctx, a))
		require.NoError(t, s.Repos().InsertAccount(ctx, other))
		d := account.Domain{ID: ident.New(ident.Domain), AccountID: a.ID, Name: "mail.example.com", CreatedAt: at}
		require.NoError(t, s.Repos().InsertDomain(ctx, d))
		err := s.Repos().InsertDomain(ctx, account.Domain{ID: ident.New(ident.Domain), AccountID: other.ID, Name: d.Name, CreatedAt: at})
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)

		list, err := s.Repos().Domains(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, []account.Domain{d}, list)
		list, err = s.Repos().Domains(ctx, other.ID)
		require.NoError(t, err)
		require.Empty(t, list)

		addrs, err := s.Repos().EmailAddresses(ctx, a.ID)
		require.NoError(t, err)
		require.Empty(t, addrs)
	})

	t.Run("VersionMovesWithWhatTheAccountOwns", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, other := newAccount("A"), newAccount("B")
		require.NoError(t, s.Repos().InsertAccount(ctx, a))
		require.NoError(t, s.Repos().InsertAccount(ctx, other))
		version := func(id string) int64 {
			got, err := s.Repos().Account(ctx, id)
			require.NoError(t, err)
			return got.Version
		}
		last := version(a.ID)
		changes := map[string]func(){
			"insert number": func() {
				require.NoError(t, s.Repos().InsertNumber(ctx, account.Number{ID: "num_v1", AccountID: a.ID, Number: "+14155550111",
					Service: account.WhatsApp, Provider: account.ProviderSandbox, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}))
			},
			"disable number": func() {
				_, err := s.Repos().SetNumberEnabled(ctx, a.ID, "num_v1", false)
				require.NoError(t, err)
			},
			"set number profile": func() {
				name := "Ada"
				_, err := s.Repos().SetNumberProfile(ctx, a.ID, "num_v1", account.ProfileChange{Name: &name, At: at})
				require.NoError(t, err)
			},
			"insert domain": func() {
				require.NoError(t, s.Repos().InsertDomain(ctx, account.Domain{ID: "dom_v1", AccountID: a.ID, Name: "v.example.com", CreatedAt: at}))
			},
			"rename": func() {
				_, err := s.Repos().RenameAccount(ctx, a.ID, "A2", at)
				require.NoError(t, err)
			},
		}
		for _, name := range []string{"insert number", "disable number", "set number profile", "insert domain", "rename"} {
			changes[name]()
			now := version(a.ID)
			require.Greater(t, now, last, "%s must move the version", name)
			last = now
		}
		require.Equal(t, int64(0), version(other.ID), "other accounts are untouched")
	})

	t.Run("AccountWithCredentialsIsAllOrNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := newAccount("A"), newAccount("B")
		require.NoError(t, s.Repos().InsertAccount(ctx, a, newCredential(a.ID, 1)))
		err := s.Repos().InsertAccount(ctx, b, newCredential(b.ID, 2), newCredential(b.ID, 1))
		require.True(t, failure.Is(err, failure.KindConflict), "the second credential's key hash is taken, got %v", err)
		_, err = s.Repos().Account(ctx, b.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "the account is rolled back with its credentials, got %v", err)
		_, err = s.Repos().CredentialByKeyHash(ctx, newCredential(b.ID, 2).KeyHash, nil)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

		require.NoError(t, s.Repos().InsertAccount(ctx, b, newCredential(b.ID, 2)))
		creds, err := s.Repos().Credentials(ctx, b.ID)
		require.NoError(t, err)
		require.Len(t, creds, 1, "the store stays usable after a rollback")
	})

	t.Run("ConcurrentWriters", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		// Writers insert accounts with their credentials while others rename
		// one shared account. Every insert must land whole, and the shared
		// account must end as one writer's complete update, never a mix.
		shared := newAccount("shared")
		require.NoError(t, s.Repos().InsertAccount(ctx, shared))
		const writers, each = 8, 15
		var wg sync.WaitGroup
		errs := make(chan error, writers*each*2)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					a := newAccount(fmt.Sprintf("w%d-%d", w, i))
					errs <- s.Repos().InsertAccount(ctx, a, newCredential(a.ID, byte(w*each+i)))
					_, err := s.Repos().RenameAccount(ctx, shared.ID, a.Name, at.Add(time.Duration(w*each+i)*time.Second))
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		n, err := s.Repos().CountAccounts(ctx)
		require.NoError(t, err)
		require.Equal(t, writers*each+1, n)
		list, err := s.Repos().Accounts(ctx)
		require.NoError(t, err)
		for _, a := range list {
			if a.ID == shared.ID {
				continue
			}
			creds, err := s.Repos().Credentials(ctx, a.ID)
			require.NoError(t, err)
			require.Len(t, creds, 1, "account %s lost its credential", a.Name)
		}
		final, err := s.Repos().Account(ctx, shared.ID)
		require.NoError(t, err)
		var w, i int
		_, err = fmt.Sscanf(final.Name, "w%d-%d", &w, &i)
		require.NoError(t, err)
		require.Equal(t, at.Add(time.Duration(w*each+i)*time.Second), final.UpdatedAt, "name and time must come from the same writer")
	})
}
