package sessions_test

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
	"github.com/switchboard-dev/switchboard/application/sessions"
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
	db       *store.DB
	clock    *clock
	accounts *accounts.Service
	svc      *sessions.Service
	key      string
	secret   string
	p        accounts.Principal
}

const (
	idle   = 30 * time.Minute
	maxAge = 2 * time.Hour
)

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	c := &clock{now: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{Now: c.Now})
	a, cred, err := acc.CreateAccount(context.Background(), "Acme")
	require.NoError(t, err)
	return &testBundle{
		db: db, clock: c, accounts: acc,
		svc:    sessions.NewService(db.SessionStore(), acc, keys, sessions.Options{IdleTimeout: idle, MaxAge: maxAge, Now: c.Now}),
		key:    cred.Key,
		secret: cred.Secret,
		p:      accounts.Principal{AccountID: a.ID, CredentialID: cred.Credential.ID},
	}
}

func (b *testBundle) signIn(t *testing.T) sessions.Issued {
	t.Helper()
	issued, err := b.svc.SignIn(context.Background(), b.key, b.secret)
	require.NoError(t, err)
	return issued
}

func unauthenticated(t *testing.T, err error) {
	t.Helper()
	require.True(t, failure.Is(err, failure.KindUnauthenticated), "got %v", err)
}

func TestSignInStoresOnlyTheTokenHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	issued := b.signIn(t)
	require.Len(t, issued.Token, 43, "256 random bits in unpadded base64url")
	require.Equal(t, b.clock.Now().Add(maxAge), issued.Ends)

	stored, err := b.db.SessionStore().Session(ctx, issued.Session.TokenHash)
	require.NoError(t, err)
	require.Equal(t, b.p, stored.Principal())
	require.NotContains(t, string(stored.TokenHash), issued.Token)
	require.Equal(t, b.clock.Now().Add(idle), stored.ExpiresAt)

	p, err := b.svc.Resume(ctx, issued.Token)
	require.NoError(t, err)
	require.Equal(t, b.p, p)

	again := b.signIn(t)
	require.NotEqual(t, issued.Token, again.Token, "every sign-in is its own session")
}

func TestWrongCredentialsStartNoSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for name, pair := range map[string][2]string{
		"wrong secret": {b.key, b.secret + "x"},
		"no secret":    {b.key, ""},
		"unknown key":  {accounts.KeyPrefix + strings.Repeat("a", 32), b.secret},
	} {
		_, err := b.svc.SignIn(ctx, pair[0], pair[1])
		require.True(t, failure.Is(err, failure.KindUnauthenticated), "%s: got %v", name, err)
	}
	n, err := b.db.SessionStore().PruneSessions(ctx, b.clock.Now().Add(100*time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "no session was stored")
}

func TestForgedTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	issued := b.signIn(t)
	flipped := []byte(issued.Token)
	flipped[10] ^= 1
	for name, token := range map[string]string{
		"empty": "", "short": issued.Token[:42], "long": issued.Token + "A",
		"tampered": string(flipped), "not base64url": strings.Repeat("+", 43),
		"unknown": strings.Repeat("A", 43),
	} {
		_, err := b.svc.Resume(ctx, token)
		require.True(t, failure.Is(err, failure.KindUnauthenticated), "%s: got %v", name, err)
	}
}

func TestIdleSessionsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	issued := b.signIn(t)

	// Used every 20 minutes, the session outlives its idle timeout many
	// times over.
	for range 3 {
		b.clock.Advance(20 * time.Minute)
		_, err := b.svc.Resume(ctx, issued.Token)
		require.NoError(t, err)
	}
	// Check (a socket's recheck) is no use: it does not move the timeout.
	b.clock.Advance(20 * time.Minute)
	_, err := b.svc.Check(ctx, issued.Token)
	require.NoError(t, err)
	b.clock.Advance(10 * time.Minute)
	_, err = b.svc.Check(ctx, issued.Token)
	unauthenticated(t, err)
	_, err = b.svc.Resume(ctx, issued.Token)
	unauthenticated(t, err)
}

func TestSessionsEndAtTheirMaximumAge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	issued := b.signIn(t)
	for b.clock.Now().Before(issued.Ends.Add(-10 * time.Minute)) {
		b.clock.Advance(10 * time.Minute)
		_, err := b.svc.Resume(ctx, issued.Token)
		require.NoError(t, err)
	}
	stored, err := b.db.SessionStore().Session(ctx, issued.Session.TokenHash)
	require.NoError(t, err)
	require.Equal(t, issued.Ends, stored.ExpiresAt, "the idle timeout never reaches past the maximum age")
	b.clock.Advance(10 * time.Minute)
	_, err = b.svc.Resume(ctx, issued.Token)
	unauthenticated(t, err)
}

// Uses closer together than TouchEvery write nothing.
func TestTouchesAreThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	issued := b.signIn(t)
	signedIn := b.clock.Now()
	b.clock.Advance(30 * time.Second) // under a minute: idle/20 is 90 s
	_, err := b.svc.Resume(ctx, issued.Token)
	require.NoError(t, err)
	stored, err := b.db.SessionStore().Session(ctx, issued.Session.TokenHash)
	require.NoError(t, err)
	require.Equal(t, signedIn, stored.LastSeenAt)

	b.clock.Advance(time.Minute)
	_, err = b.svc.Resume(ctx, issued.Token)
	require.NoError(t, err)
	stored, err = b.db.SessionStore().Session(ctx, issued.Session.TokenHash)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now(), stored.LastSeenAt)
	require.Equal(t, b.clock.Now().Add(idle), stored.ExpiresAt)
}

func TestRevokingTheKeyEndsItsSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first, second := b.signIn(t), b.signIn(t)
	_, err := b.accounts.RevokeCredential(ctx, b.p.AccountID, b.p.CredentialID)
	require.NoError(t, err)
	for _, issued := range []sessions.Issued{first, second} {
		_, err := b.svc.Resume(ctx, issued.Token)
		unauthenticated(t, err)
		_, err = b.svc.Check(ctx, issued.Token)
		unauthenticated(t, err)
	}
	_, err = b.svc.SignIn(ctx, b.key, b.secret)
	unauthenticated(t, err)
}

func TestSignOutEndsTheSessionOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	mine, other := b.signIn(t), b.signIn(t)
	require.NoError(t, b.svc.SignOut(ctx, mine.Token))
	_, err := b.svc.Resume(ctx, mine.Token)
	unauthenticated(t, err)
	_, err = b.svc.Resume(ctx, other.Token)
	require.NoError(t, err, "another session of the same key goes on")
	require.NoError(t, b.svc.SignOut(ctx, mine.Token), "signing out twice is no error")
	require.NoError(t, b.svc.SignOut(ctx, "garbage"))
}
