package accounts_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type testBundle struct {
	db    *store.DB
	keys  *keyring.Keyring
	clock *clock
	svc   *accounts.Service
}

func setup(t *testing.T, cacheTTL time.Duration) *testBundle {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	b := &testBundle{db: db, keys: keys, clock: &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}}
	b.svc = b.newReplica(cacheTTL)
	return b
}

// newReplica is another service instance over the same database, as a
// second server process would be.
func (b *testBundle) newReplica(cacheTTL time.Duration) *accounts.Service {
	bound := store.Bind(b.db, func(r *store.Repos) accounts.Repos { return r })
	return accounts.NewService(bound, b.keys, accounts.Options{Now: b.clock.Now, AuthCacheTTL: cacheTTL})
}

func TestCredentialsAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	a, cred, err := b.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(cred.Key, accounts.KeyPrefix))
	require.True(t, strings.HasPrefix(cred.Secret, accounts.SecretPrefix))
	require.GreaterOrEqual(t, len(cred.Key), 36)
	require.GreaterOrEqual(t, len(cred.Secret), 52)

	p, err := b.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err)
	require.Equal(t, a.ID, p.AccountID)
	require.Equal(t, cred.Credential.ID, p.CredentialID)

	p, err = b.svc.Authenticate(ctx, cred.Key, "", true)
	require.NoError(t, err, "a key alone authenticates where the caller allows it (cron routes)")
	require.Equal(t, a.ID, p.AccountID)

	for name, pair := range map[string][2]string{
		"wrong secret":   {cred.Key, cred.Secret[:len(cred.Secret)-1] + "x"},
		"empty secret":   {cred.Key, ""},
		"secret as key":  {cred.Secret, cred.Secret},
		"unknown key":    {accounts.KeyPrefix + strings.Repeat("a", 32), cred.Secret},
		"empty":          {"", ""},
		"key with space": {cred.Key + " ", cred.Secret},
	} {
		_, err := b.svc.Authenticate(ctx, pair[0], pair[1], false)
		require.True(t, failure.Is(err, failure.KindUnauthenticated), "%s: got %v", name, err)
	}

	// Nothing secret is stored in the clear.
	creds, err := b.svc.Credentials(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, creds, 1)
	require.NotContains(t, string(creds[0].KeyHash), cred.Key)
	require.NotContains(t, string(creds[0].SecretHash), cred.Secret)
	require.Equal(t, cred.Key[:10], creds[0].KeyPrefix)
}

func TestRevocationAndAuthCache(t *testing.T) {
	t.Parallel()
	b := setup(t, 5*time.Second)
	ctx := context.Background()
	a, cred, replica := b.revokedWhileCached(t)
	_, err := b.svc.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.True(t, failure.Is(err, failure.KindUnauthenticated), "the revoking instance refuses at once, got %v", err)

	_, err = replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "another replica may use its cached row until the TTL")
	b.clock.Advance(5 * time.Second)
	_, err = replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.True(t, failure.Is(err, failure.KindUnauthenticated), "after the TTL the revocation is seen everywhere, got %v", err)

	// The cache never makes a wrong secret pass.
	fresh, err := b.svc.IssueCredential(ctx, a.ID, "fresh")
	require.NoError(t, err)
	_, err = replica.Authenticate(ctx, fresh.Key, fresh.Secret, false)
	require.NoError(t, err)
	_, err = replica.Authenticate(ctx, fresh.Key, "sws_wrong", false)
	require.True(t, failure.Is(err, failure.KindUnauthenticated), "got %v", err)

	_, err = b.svc.RevokeCredential(ctx, "acc_other", fresh.Credential.ID)
	require.True(t, failure.Is(err, failure.KindNotFound), "another account cannot revoke it, got %v", err)
}

// An unknown key does the work of a wrong secret: one constant-time
// comparison of the presented secret's keyed hash, and within the cache
// TTL no database read (the one for a known key is cached as well).
func TestUnknownKeysDoTheWorkOfWrongSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t, 5*time.Second)
	ctx := context.Background()
	a, cred, err := b.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	revoked, err := b.svc.IssueCredential(ctx, a.ID, "revoked")
	require.NoError(t, err)
	_, err = b.svc.RevokeCredential(ctx, a.ID, revoked.Credential.ID)
	require.NoError(t, err)
	comparisons := accounts.CountSecretComparisons(b.svc)
	unknown := accounts.KeyPrefix + strings.Repeat("a", 32)

	for round := range 2 {
		for name, key := range map[string]string{"wrong secret": cred.Key, "unknown key": unknown, "revoked key": revoked.Key} {
			before := comparisons.Load()
			_, err := b.svc.Authenticate(ctx, key, "sws_wrong", false)
			require.True(t, failure.Is(err, failure.KindUnauthenticated), "%s (round %d): got %v", name, round, err)
			require.Equal(t, int32(1), comparisons.Load()-before, "%s (round %d): one secret comparison", name, round)
		}
		if round == 0 {
			// The second round is answered from the cache alone.
			require.NoError(t, b.db.Close())
		}
	}
}

func TestAddNumberValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	a, _, err := b.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)

	_, err = b.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "4155550100", Service: "sms", Provider: "twilio"})
	fe := failure.As(err)
	require.Equal(t, failure.KindInvalid, fe.Kind)
	var fields []string
	for _, f := range fe.Fields {
		fields = append(fields, f.Path[0].(string))
	}
	require.Equal(t, []string{"number", "service"}, fields, "every broken rule is reported at once")

	_, err = b.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "telegram"})
	require.True(t, failure.Is(err, failure.KindInvalid), "telegram cannot serve whatsapp, got %v", err)

	_, err = b.svc.AddNumber(ctx, accounts.NumberInput{AccountID: "acc_nobody", Number: "+14155550100", Service: "whatsapp", Provider: "sandbox"})
	require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

	n, err := b.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "telegram", Provider: "telegram",
		Settings: map[string]string{"bot_token": "123456:SECRET-TOKEN"}, Enabled: true})
	require.NoError(t, err)
	require.NotContains(t, string(n.SealedSettings), "SECRET-TOKEN", "provider tokens are encrypted at rest")
	settings, err := b.svc.NumberSettings(n)
	require.NoError(t, err)
	require.Equal(t, "123456:SECRET-TOKEN", settings["bot_token"])

	_, err = b.svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "telegram", Provider: "sandbox"})
	require.Equal(t, "number_exists", failure.As(err).Code)

	disabled, err := b.svc.SetNumberEnabled(ctx, a.ID, "+14155550100", false)
	require.NoError(t, err)
	require.False(t, disabled.Enabled)
	require.Equal(t, n.ID, disabled.ID)
}

func TestDomainsAndDemo(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	demo, err := b.svc.EnsureDemo(ctx)
	require.NoError(t, err)
	require.NotNil(t, demo)
	require.Equal(t, accounts.DemoNumber, demo.Number.Number)
	again, err := b.svc.EnsureDemo(ctx)
	require.NoError(t, err)
	require.Nil(t, again, "the demo account is created once")

	d, err := b.svc.AddDomain(ctx, demo.Account.ID, " Mail.Example.COM. ")
	require.NoError(t, err)
	require.Equal(t, "mail.example.com", d.Name)
	_, err = b.svc.AddDomain(ctx, demo.Account.ID, "mail.example.com")
	require.Equal(t, "domain_exists", failure.As(err).Code)
	_, err = b.svc.AddDomain(ctx, demo.Account.ID, "not a domain")
	require.True(t, failure.Is(err, failure.KindInvalid), "got %v", err)

	o, err := b.svc.Overview(ctx, demo.Account.ID)
	require.NoError(t, err)
	require.Len(t, o.Numbers, 1)
	require.Len(t, o.Domains, 1)
	_, err = b.svc.Overview(ctx, "not-an-id")
	require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
}

// The overview cache must never serve a copy older than a change made by
// another process.
func TestOverviewSeesChangesFromOtherReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	a, _, err := b.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, err := b.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.Empty(t, o.Numbers)

	other := b.newReplica(0)
	n, err := other.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	o, err = b.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, o.Numbers, 1)
	require.True(t, o.Numbers[0].Enabled)

	_, err = other.SetNumberEnabled(ctx, a.ID, n.ID, false)
	require.NoError(t, err)
	_, err = other.AddDomain(ctx, a.ID, "mail.acme.test")
	require.NoError(t, err)
	_, err = other.Rename(ctx, a.ID, "Acme 2")
	require.NoError(t, err)
	o, err = b.svc.Overview(ctx, a.ID)
	require.NoError(t, err)
	require.False(t, o.Numbers[0].Enabled)
	require.Len(t, o.Domains, 1)
	require.Equal(t, "Acme 2", o.Account.Name)
}

// A key in use is read again in the background in the last fifth of its
// TTL, while its requests go on with the kept row: none of them waits for
// that read, and what it reads (here a revocation) applies before the TTL.
func TestAKeyInUseIsReadAgainBeforeItExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, 5*time.Second)
	ctx := context.Background()
	_, cred, replica := b.revokedWhileCached(t)

	b.clock.Advance(3 * time.Second)
	_, err := replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "before the refresh window the kept row serves")

	b.clock.Advance(1500 * time.Millisecond)
	_, err = replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "the request that starts the refresh does not wait for it")
	require.Eventually(t, func() bool {
		_, err := replica.Authenticate(ctx, cred.Key, cred.Secret, false)
		return failure.Is(err, failure.KindUnauthenticated)
	}, 5*time.Second, 5*time.Millisecond, "the background read saw the revocation before the TTL ran out")
}

// revokedWhileCached creates an account, has a second replica (auth cache
// TTL 5 s) authenticate its credential, so that it keeps the row, and then
// revokes the credential through b's service.
func (b *testBundle) revokedWhileCached(t *testing.T) (account.Account, accounts.IssuedCredential, *accounts.Service) {
	t.Helper()
	ctx := context.Background()
	a, cred, err := b.svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	replica := b.newReplica(5 * time.Second)
	_, err = replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "the replica caches the credential")
	_, err = b.svc.RevokeCredential(ctx, a.ID, cred.Credential.ID)
	require.NoError(t, err)
	return a, cred, replica
}

// A key revoked on one replica (or with the CLI) stops working on the
// others within a look of their revocation watchers, not the auth cache
// TTL: without the watcher the replica keeps answering from its cache.
func TestRevocationsReachOtherReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	_, cred, replica := b.revokedWhileCached(t)
	_, err := replica.Authenticate(ctx, cred.Key, cred.Secret, false)
	require.NoError(t, err, "the replica still answers from its cache: the watcher is what forgets")

	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		replica.WatchRevocations(watchCtx, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { stop(); <-done })
	require.Eventually(t, func() bool {
		_, err := replica.Authenticate(ctx, cred.Key, cred.Secret, false)
		return failure.Is(err, failure.KindUnauthenticated)
	}, 5*time.Second, 5*time.Millisecond, "the revocation reached the replica's cache")
}
