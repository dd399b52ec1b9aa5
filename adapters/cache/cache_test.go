package cache_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/cache"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/email"
	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// The rules are held against the real store: each "replica" is a set of
// caches and services over the same SQLite database, as another server
// process would be.

type testBundle struct {
	db   *store.DB
	keys *keyring.Keyring
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	return &testBundle{db: dbtest.Open(t, store.SQLite), keys: keys}
}

// replica is one process's caches and the stores they decorate.
type replica struct {
	caches   *cache.Caches
	accounts accounts.Store
	svc      *accounts.Service
}

func (b *testBundle) replica(ttl time.Duration) replica {
	c := cache.New(cache.Options{TTL: ttl})
	s := c.Accounts(b.db.AccountStore())
	return replica{caches: c, accounts: s, svc: accounts.NewService(s, b.keys, accounts.Options{})}
}

func (r replica) messaging(b *testBundle) messaging.Repos {
	return r.caches.Messaging(b.db.MessagingStore()).Repos()
}

func (r replica) email(b *testBundle) email.Repos {
	return r.caches.Email(b.db.EmailStore()).Repos()
}

func unauthenticated(t *testing.T, err error) {
	t.Helper()
	require.True(t, failure.Is(err, failure.KindUnauthenticated), "got %v", err)
}

// A revoked key stops at once on the replica that revoked it, and within
// the TTL on one that kept it.
func TestRevokedKeyStopsHereAtOnceAndElsewhereWithinTheTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	here, there := b.replica(time.Hour), b.replica(ttl)
	a, cred, err := here.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, err = here.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err)
	_, err = there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err)

	revoked := time.Now()
	_, err = here.svc.RevokeCredential(ctx, a.ID, cred.Credential.ID)
	require.NoError(t, err)
	_, err = here.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	unauthenticated(t, err)
	_, err = there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	if time.Since(revoked) < ttl/2 {
		require.NoError(t, err, "the other replica answers from its cache within the TTL")
	}
	time.Sleep(time.Until(revoked.Add(ttl)))
	_, err = there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	unauthenticated(t, err)

	// The cache never lets a wrong secret pass.
	fresh, err := here.svc.IssueCredential(ctx, a.ID, "fresh")
	require.NoError(t, err)
	_, err = there.svc.Authenticate(ctx, fresh.Key, fresh.Secret, false)
	require.NoError(t, err)
	_, err = there.svc.Authenticate(ctx, fresh.Key, "sws_wrong", false)
	unauthenticated(t, err)
}

// A key revoked on one replica (or with the CLI) stops working on another
// within a look of its revocation watcher, not its TTL.
func TestRevocationsReachOtherReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	here, there := b.replica(time.Hour), b.replica(time.Hour)
	a, cred, err := here.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, err = there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err)
	_, err = here.svc.RevokeCredential(ctx, a.ID, cred.Credential.ID)
	require.NoError(t, err)
	_, err = there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "the other replica still answers from its cache: the watcher is what forgets")

	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.WatchRevocations(watchCtx, there.accounts, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { stop(); <-done })
	require.Eventually(t, func() bool {
		_, err := there.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
		return failure.Is(err, failure.KindUnauthenticated)
	}, 5*time.Second, 5*time.Millisecond, "the revocation reached the other replica's cache")
}

// A credential checked by id (a dashboard session's Verify) is kept like
// one checked by key: its revocation through this replica ends it at once,
// and one made elsewhere within a look of the watcher, well inside the TTL.
func TestVerifiedCredentialsFollowRevocations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	here, there := b.replica(time.Hour), b.replica(time.Hour)
	a, cred, err := here.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, other, err := here.svc.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	p := accounts.Principal{AccountID: a.ID, CredentialID: cred.Credential.ID}
	require.NoError(t, here.svc.Verify(ctx, p))
	require.NoError(t, there.svc.Verify(ctx, p))
	unauthenticated(t, there.svc.Verify(ctx, accounts.Principal{AccountID: a.ID, CredentialID: other.Credential.ID}))
	unauthenticated(t, there.svc.Verify(ctx, accounts.Principal{AccountID: other.Credential.AccountID, CredentialID: cred.Credential.ID}))

	_, err = here.svc.RevokeCredential(ctx, a.ID, cred.Credential.ID)
	require.NoError(t, err)
	unauthenticated(t, here.svc.Verify(ctx, p))
	require.NoError(t, there.svc.Verify(ctx, p), "the other replica answers from its cache until its watcher looks")

	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.WatchRevocations(watchCtx, there.accounts, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { stop(); <-done })
	require.Eventually(t, func() bool {
		return failure.Is(there.svc.Verify(ctx, p), failure.KindUnauthenticated)
	}, 5*time.Second, 5*time.Millisecond, "the revocation reached the other replica's cache of credentials by id")
}

// countingCredentials counts the credential lookups by key hash that
// reach the store under the cache.
type countingCredentials struct {
	accounts.Store
	reads *atomic.Int32
}

func (s countingCredentials) Repos() accounts.Repos {
	return countedRepos{Repos: s.Store.Repos(), reads: s.reads}
}

type countedRepos struct {
	accounts.Repos
	reads *atomic.Int32
}

func (r countedRepos) CredentialByKeyHash(ctx context.Context, keyHash []byte, accept func(account.Credential) bool) (account.Credential, error) {
	r.reads.Add(1)
	return r.Repos.CredentialByKeyHash(ctx, keyHash, accept)
}

// countingKeyring counts the keyed hashes it computes.
type countingKeyring struct {
	*keyring.Keyring
	hashes atomic.Int32
}

func (k *countingKeyring) Hash(purpose, value string) []byte {
	k.hashes.Add(1)
	return k.Keyring.Hash(purpose, value)
}

// Every refused key, whether unknown, revoked or presented with a wrong
// secret, and whether kept or not, costs the same work: two keyed hashes
// and one read of the database; only a key with its right secret is
// answered from the cache. Timing then does not tell a key in use from
// one that does not exist.
func TestRefusedKeysCostOneReadKeptOrNot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var reads atomic.Int32
	keys := &countingKeyring{Keyring: b.keys}
	svc := accounts.NewService(cache.New(cache.Options{TTL: time.Hour}).Accounts(countingCredentials{Store: b.db.AccountStore(), reads: &reads}), keys, accounts.Options{})
	a, cred, err := svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	revoked, err := svc.IssueCredential(ctx, a.ID, "revoked")
	require.NoError(t, err)
	_, err = svc.RevokeCredential(ctx, a.ID, revoked.Credential.ID)
	require.NoError(t, err)
	unknown := accounts.KeyPrefix + strings.Repeat("a", 32)

	for round := range 2 {
		before := reads.Load()
		_, err = svc.Authenticate(ctx, cred.Key, cred.Secret, false)
		require.NoError(t, err, "round %d", round)
		if round > 0 {
			require.Equal(t, before, reads.Load(), "a key with its right secret is answered from the cache")
		}
		for name, key := range map[string]string{"wrong secret": cred.Key, "unknown key": unknown, "revoked key": revoked.Key} {
			reads.Store(0)
			keys.hashes.Store(0)
			_, err := svc.Authenticate(ctx, key, "sws_wrong", false)
			unauthenticated(t, err)
			require.EqualValues(t, 1, reads.Load(), "%s (round %d): one read", name, round)
			require.EqualValues(t, 2, keys.hashes.Load(), "%s (round %d): the key's hash and the secret's", name, round)
		}
	}
}

// The holdings cache never serves a copy older than a change made by
// another process: it is kept by the account's version.
func TestOverviewSeesChangesFromOtherReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	here, there := b.replica(time.Hour), b.replica(time.Hour)
	a, _, err := here.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, err := here.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.Empty(t, o.Numbers)

	n, err := there.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	o, err = here.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, o.Numbers, 1)
	require.True(t, o.Numbers[0].Enabled)

	_, err = there.svc.SetNumberEnabled(ctx, a.ID, n.ID, false)
	require.NoError(t, err)
	_, err = there.svc.AddDomain(ctx, a.ID, "mail.acme.test")
	require.NoError(t, err)
	_, err = there.svc.Rename(ctx, a.ID, "Acme 2")
	require.NoError(t, err)
	o, err = here.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.False(t, o.Numbers[0].Enabled)
	require.Len(t, o.Domains, 1)
	require.Equal(t, "Acme 2", o.Account.Name)
}

// A sending number is kept for the TTL: changed through this process it
// is read again at once, through another within the TTL; one not found is
// not kept.
func TestSendingNumbersAreKeptForTheTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	here, there := b.replica(ttl), b.replica(ttl)
	a, _, err := here.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	const number = "+15550005555"
	enabled := func() bool {
		got, err := here.messaging(b).NumberByAddress(ctx, account.WhatsApp, number)
		require.NoError(t, err)
		return got.Enabled
	}
	_, err = here.messaging(b).NumberByAddress(ctx, account.WhatsApp, number)
	require.True(t, failure.Is(err, failure.KindNotFound), "not there yet: %v", err)
	n, err := there.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: number, Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	require.True(t, enabled(), "a number not found is not kept: added elsewhere, it is found at once")

	_, err = here.svc.SetNumberEnabled(ctx, a.ID, n.ID, false)
	require.NoError(t, err)
	require.False(t, enabled(), "disabled through this process: read again at once")

	changed := time.Now()
	_, err = there.svc.SetNumberEnabled(ctx, a.ID, n.ID, true)
	require.NoError(t, err)
	if time.Since(changed) < ttl/2 {
		require.False(t, enabled(), "changed elsewhere: kept for the TTL")
	}
	time.Sleep(time.Until(changed.Add(ttl)))
	require.True(t, enabled(), "read again once the TTL has passed")
}

// A thread is kept only once its user has written: before that every send
// reads it, so the first send after the user's first message goes; a kept
// thread that stopped being sendable (its row changed by an operator)
// stops within the TTL.
func TestThreadsAreKeptOnceSendable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	r := b.replica(ttl)
	now := time.Now().UTC().Truncate(time.Microsecond)
	th := domain.Thread{ID: "thr_cache", AccountID: "acc_cache", Service: account.WhatsApp, Type: domain.Individual,
		AgentNumber: "+15550001111", Contact: "+15550002222", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.db.AccountStore().InsertAccount(ctx, account.Account{ID: th.AccountID, Name: "c", Version: 1, CreatedAt: now, UpdatedAt: now}))
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th}}}))
	sendable := func() bool {
		got, err := r.messaging(b).IndividualThread(ctx, th.AccountID, th.Service, th.AgentNumber, th.Contact)
		require.NoError(t, err)
		return domain.CheckIndividualSend(&got) == nil
	}
	require.False(t, sendable())
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Inbound: []writes.InboundActivity{
		{AccountID: th.AccountID, Service: th.Service, Address: th.Contact, ThreadID: th.ID, At: now}}}))
	require.True(t, sendable(), "a thread not yet sendable is not kept")

	stopped := time.Now()
	_, err := b.db.Bun().NewRaw("UPDATE threads SET last_inbound_at = NULL WHERE id = ?", th.ID).Exec(ctx)
	require.NoError(t, err)
	if time.Since(stopped) < ttl/2 {
		require.True(t, sendable(), "kept for the TTL")
	}
	time.Sleep(time.Until(stopped.Add(ttl)))
	require.False(t, sendable(), "no longer sendable once the TTL has passed")
}

// A kept thread answers while its customer service window is open; one
// whose window closed is read again, so the user's new message, which
// opened it again on another replica, lets the next send go at once.
func TestThreadsWithAClosedWindowAreReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.replica(time.Hour)
	now := time.Now().UTC().Truncate(time.Microsecond)
	th := domain.Thread{ID: "thr_window", AccountID: "acc_window", Service: account.WhatsApp, Type: domain.Individual,
		AgentNumber: "+15550001111", Contact: "+15550002222", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.db.AccountStore().InsertAccount(ctx, account.Account{ID: th.AccountID, Name: "c", Version: 1, CreatedAt: now, UpdatedAt: now}))
	wrote := func(closes time.Time) {
		require.NoError(t, b.db.Commit(ctx, writes.Batch{
			Inbound: []writes.InboundActivity{{AccountID: th.AccountID, Service: th.Service, Address: th.Contact, ThreadID: th.ID, At: now}},
			Windows: []writes.ThreadWindow{{ThreadID: th.ID, ClosesAt: closes}},
		}))
	}
	window := func() time.Time {
		got, err := r.messaging(b).IndividualThread(ctx, th.AccountID, th.Service, th.AgentNumber, th.Contact)
		require.NoError(t, err)
		require.NotNil(t, got.WindowClosesAt)
		return *got.WindowClosesAt
	}
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th}}}))
	closed := now.Add(-time.Hour)
	wrote(closed)
	require.True(t, window().Equal(closed))

	open := now.Add(23 * time.Hour)
	wrote(open)
	require.True(t, window().Equal(open), "a kept thread whose window closed is read again")

	_, err := b.db.Bun().NewRaw("UPDATE threads SET window_closes_at = ? WHERE id = ?", closed, th.ID).Exec(ctx)
	require.NoError(t, err)
	require.True(t, window().Equal(open), "a kept thread whose window is open is used for the TTL")
}

// A sender address is kept once found; one not found is read again, so an
// address created elsewhere sends at once.
func TestSenderAddressesAreKeptOnceFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.replica(time.Hour)
	_, err := r.email(b).EmailAddressByAddress(ctx, "sales", "mail.example.com")
	require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, b.db.AccountStore().InsertAccount(ctx, account.Account{ID: "acc_mail", Name: "m", Version: 1, CreatedAt: now, UpdatedAt: now}))
	addr := account.EmailAddress{ID: "eml_cache", AccountID: "acc_mail", LocalPart: "sales", Domain: "mail.example.com", CreatedAt: now}
	require.NoError(t, b.db.EmailStore().InsertEmailAddress(ctx, addr, false))
	got, err := r.email(b).EmailAddressByAddress(ctx, "sales", "mail.example.com")
	require.NoError(t, err)
	require.Equal(t, addr.AccountID, got.AccountID)

	require.NoError(t, b.db.Close())
	got, err = r.email(b).EmailAddressByAddress(ctx, "sales", "mail.example.com")
	require.NoError(t, err, "kept: answered without the database")
	require.Equal(t, addr.ID, got.ID)
}

// countingNumbers is a messaging store whose number lookups block until
// released and are counted.
type countingNumbers struct {
	messaging.Repos
	reads   atomic.Int32
	release chan struct{}
	err     error
}

func (c *countingNumbers) NumberByAddress(ctx context.Context, _ account.Service, number string) (account.Number, error) {
	c.reads.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done():
		return account.Number{}, ctx.Err()
	}
	return account.Number{ID: "num_" + number, Number: number}, c.err
}

type countingStore struct {
	messaging.Store
	repos *countingNumbers
}

func (s countingStore) Repos() messaging.Repos { return s.repos }

// Concurrent misses of one key share one read; a caller that gives up
// stops waiting without ending the read for the others; a failed read is
// not kept.
func TestMissesShareOneRead(t *testing.T) {
	t.Parallel()
	fake := &countingNumbers{release: make(chan struct{})}
	repos := cache.New(cache.Options{TTL: time.Hour}).Messaging(countingStore{repos: fake}).Repos()
	ctx := context.Background()

	impatient, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := repos.NumberByAddress(impatient, account.WhatsApp, "+1555")
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return fake.reads.Load() == 1 }, 5*time.Second, time.Millisecond)
	var wg sync.WaitGroup
	got := make([]account.Number, 20)
	for i := range got {
		wg.Go(func() {
			n, err := repos.NumberByAddress(ctx, account.WhatsApp, "+1555")
			require.NoError(t, err)
			got[i] = n
		})
	}
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	close(fake.release)
	wg.Wait()
	require.EqualValues(t, 1, fake.reads.Load(), "one read for every concurrent miss")
	for _, n := range got {
		require.Equal(t, "num_+1555", n.ID)
	}
	_, err := repos.NumberByAddress(ctx, account.WhatsApp, "+1555")
	require.NoError(t, err)
	require.EqualValues(t, 1, fake.reads.Load(), "kept")

	fake.err = errors.New("database away")
	for range 2 {
		_, err = repos.NumberByAddress(ctx, account.WhatsApp, "+1666")
		require.ErrorContains(t, err, "database away")
	}
	require.EqualValues(t, 3, fake.reads.Load(), "a failure is not kept")
}

// Each cache is bounded: past MaxEntries the least recently used go.
func TestCachesAreBounded(t *testing.T) {
	t.Parallel()
	fake := &countingNumbers{release: make(chan struct{})}
	close(fake.release)
	repos := cache.New(cache.Options{TTL: time.Hour, MaxEntries: 2}).Messaging(countingStore{repos: fake}).Repos()
	ctx := context.Background()
	for _, n := range []string{"+1", "+2", "+3", "+1"} {
		_, err := repos.NumberByAddress(ctx, account.WhatsApp, n)
		require.NoError(t, err)
	}
	require.EqualValues(t, 4, fake.reads.Load(), "+1 was dropped for +3 and read again")
}

// An erasure through the decorator forgets the sendable threads it
// deleted: the next send reads the database and finds none; another
// replica's kept thread goes within the TTL.
func TestErasedThreadsAreForgotten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r, other := b.replica(time.Hour), b.replica(time.Hour)
	now := time.Now().UTC().Truncate(time.Microsecond)
	th := domain.Thread{ID: "thr_erased", AccountID: "acc_erase", Service: account.WhatsApp, Type: domain.Individual,
		AgentNumber: "+15550001111", Contact: "+15550003333", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.db.AccountStore().InsertAccount(ctx, account.Account{ID: th.AccountID, Name: "e", Version: 1, CreatedAt: now, UpdatedAt: now}))
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th}}}))
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Inbound: []writes.InboundActivity{
		{AccountID: th.AccountID, Service: th.Service, Address: th.Contact, ThreadID: th.ID, At: now}}}))
	lookup := func(r replica) error {
		_, err := r.messaging(b).IndividualThread(ctx, th.AccountID, th.Service, th.AgentNumber, th.Contact)
		return err
	}
	require.NoError(t, lookup(r), "kept once sendable")
	require.NoError(t, lookup(other))

	svc := apperasure.New(r.caches.Erasure(b.db.ErasureStore()), b.keys, nil)
	rec, err := svc.Erase(ctx, apperasure.Request{AccountID: th.AccountID, ID: erasure.Identifier{Kind: erasure.Phone, Value: th.Contact}, RequestedBy: "cli"})
	require.NoError(t, err)
	require.Equal(t, 1, rec.Counts["threads"])
	require.True(t, failure.Is(lookup(r), failure.KindNotFound), "the erasing replica reads the database again")
	require.NoError(t, lookup(other), "another replica keeps it until the TTL")
}
