package accounts_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
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

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	b := &testBundle{db: db, keys: keys, clock: &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}}
	b.svc = b.newReplica()
	return b
}

// newReplica is another service instance over the same database, as a
// second server process would be.
func (b *testBundle) newReplica() *accounts.Service {
	bound := b.db.AccountStore()
	return accounts.NewService(bound, b.keys, accounts.Options{Now: b.clock.Now})
}

func TestCredentialsAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
		"wrong secret":   {cred.Key, withLastCharChanged(cred.Secret)},
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

// An unknown key does the work of a wrong secret: one constant-time
// comparison of the presented secret's keyed hash (adapters/cache makes
// both read the database; TestRefusedKeysCostOneReadKeptOrNot there).
func TestUnknownKeysDoTheWorkOfWrongSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	}
}

func TestAddNumberValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	b := setup(t)
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

// withLastCharChanged returns s with its last character replaced by a
// different one, so the result never equals s (a secret may end in any
// character of its alphabet).
func withLastCharChanged(s string) string {
	last := s[len(s)-1]
	replacement := byte('x')
	if last == replacement {
		replacement = 'y'
	}
	return s[:len(s)-1] + string(replacement)
}
