package cache

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Accounts decorates the account use cases' store with the credential
// and holdings caches, and forgets kept sending numbers when a number
// changes through it.
func (c *Caches) Accounts(next accounts.Store) accounts.Store {
	return &accountsStore{next: next, c: c}
}

type accountsStore struct {
	next accounts.Store
	c    *Caches
}

func (s *accountsStore) Repos() accounts.Repos {
	return accountsRepos{Repos: s.next.Repos(), c: s.c}
}

// accountChanges is what a write changed that the caches keep.
type accountChanges struct {
	// credentials changed (revoked): forgotten by key hash and by id.
	credentials []account.Credential
	numbers     bool
}

func (ch *accountChanges) forget(c *Caches) {
	for _, cred := range ch.credentials {
		c.credentials.forget(string(cred.KeyHash))
		c.credentialsByID.forget(cred.ID)
	}
	if ch.numbers {
		c.numbers.forgetAll()
	}
}

// accountsRepos answers the cached lookups from the caches and forgets
// what writes change once they are written.
type accountsRepos struct {
	accounts.Repos
	c *Caches
}

// CredentialByKeyHash answers from the credential cache only with a kept
// credential that accept admits (the request it authenticates); it reads
// every other lookup from the database, and keeps what it found. A refused
// key (unknown, revoked, or presented with a wrong secret) then costs one
// read whether it was kept or not, so that timing does not tell a key in
// use from one that does not exist. A key revoked through this process
// stops at once, one revoked elsewhere within the TTL, or within
// WatchRevocations' interval where it runs.
func (r accountsRepos) CredentialByKeyHash(ctx context.Context, keyHash []byte, accept func(account.Credential) bool) (account.Credential, error) {
	return r.c.credentials.getIf(ctx, string(keyHash), accept, func(ctx context.Context) (account.Credential, error) {
		return r.Repos.CredentialByKeyHash(ctx, keyHash, accept)
	}, found)
}

// Credential answers from the cache of credentials by id (what a
// dashboard session checks its credential with), kept and forgotten as
// CredentialByKeyHash's answers are: a revocation seen through the port
// forgets both.
func (r accountsRepos) Credential(ctx context.Context, accountID, id string) (account.Credential, error) {
	c, err := r.c.credentialsByID.get(ctx, id, func(ctx context.Context) (account.Credential, error) {
		// Read whatever account it belongs to, so that the kept answer
		// serves any caller; the account is checked below.
		return r.Repos.Credential(ctx, accountID, id)
	}, found)
	if err == nil && c.AccountID != accountID {
		return account.Credential{}, failure.NotFound("credential")
	}
	return c, err
}

// RevokeCredential revokes, then forgets the key.
func (r accountsRepos) RevokeCredential(ctx context.Context, accountID, id string, at time.Time) (account.Credential, error) {
	c, err := r.Repos.RevokeCredential(ctx, accountID, id, at)
	if err == nil {
		r.changed(func(ch *accountChanges) { ch.credentials = append(ch.credentials, c) })
	}
	return c, err
}

// RevokedSince forgets every key it finds revoked.
func (r accountsRepos) RevokedSince(ctx context.Context, since time.Time) ([]account.Credential, error) {
	revoked, err := r.Repos.RevokedSince(ctx, since)
	if len(revoked) > 0 {
		r.changed(func(ch *accountChanges) { ch.credentials = append(ch.credentials, revoked...) })
	}
	return revoked, err
}

// InsertNumber adds a number, then forgets the kept sending numbers.
func (r accountsRepos) InsertNumber(ctx context.Context, n account.Number) error {
	err := r.Repos.InsertNumber(ctx, n)
	r.changed(func(ch *accountChanges) { ch.numbers = true })
	return err
}

// SetNumberEnabled changes a number, then forgets the kept sending
// numbers: a number disabled through this process stops sending at once.
func (r accountsRepos) SetNumberEnabled(ctx context.Context, accountID, id string, enabled bool) (account.Number, error) {
	n, err := r.Repos.SetNumberEnabled(ctx, accountID, id, enabled)
	r.changed(func(ch *accountChanges) { ch.numbers = true })
	return n, err
}

// SetNumberProfile changes a number's profile, then forgets the kept
// sending numbers, so that no copy with the old profile is served.
func (r accountsRepos) SetNumberProfile(ctx context.Context, accountID, id string, change account.ProfileChange) (account.Number, error) {
	n, err := r.Repos.SetNumberProfile(ctx, accountID, id, change)
	r.changed(func(ch *accountChanges) { ch.numbers = true })
	return n, err
}

// Holdings answers from the cache kept by account and version: a copy is
// never served once anything the account owns changed, whichever process
// changed it.
func (r accountsRepos) Holdings(ctx context.Context, a account.Account) (accounts.Holdings, error) {
	key := a.ID + "@" + strconv.FormatInt(a.Version, 10)
	return r.c.holdings.get(ctx, key, func(ctx context.Context) (accounts.Holdings, error) {
		return r.Repos.Holdings(ctx, a)
	}, found)
}

// changed forgets what a write changed.
func (r accountsRepos) changed(record func(*accountChanges)) {
	ch := &accountChanges{}
	record(ch)
	ch.forget(r.c)
}

// RevocationPoll is how often WatchRevocations looks for keys revoked
// elsewhere: a revoked key stops working on every replica within about
// this long.
const RevocationPoll = 500 * time.Millisecond

// revocationSkew is how far before the newest revocation seen each look
// reaches again, so that a revocation stamped by a replica whose clock
// runs behind this one's is still found. Forgetting a key twice costs one
// more read of it.
const revocationSkew = 10 * time.Second

// WatchRevocations reads, through s (a store from Accounts), the
// credentials revoked anywhere since its last look, every interval until
// ctx ends; reading them forgets them from the credential cache. A key
// revoked on another replica or with the CLI, which cannot reach this
// process's cache, then stops working here within about interval instead
// of the TTL. Failed looks are logged once per outage.
func WatchRevocations(ctx context.Context, s accounts.Store, interval time.Duration, log *slog.Logger) {
	tracker := outage.NewTracker(log, "read revoked credentials", interval, 0)
	newest := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		revoked, err := s.Repos().RevokedSince(ctx, newest.Add(-revocationSkew))
		if err != nil {
			if ctx.Err() == nil {
				tracker.Failed(err)
			}
			continue
		}
		tracker.Succeeded()
		for _, c := range revoked {
			if c.RevokedAt != nil && c.RevokedAt.After(newest) {
				newest = *c.RevokedAt
			}
		}
	}
}
