package cache

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// Email decorates the email use cases' store: outside a transaction, a
// send's sender address comes from the cache. Addresses are only ever
// created, never moved to another account, so a kept one is right until
// its account is deleted (seen within the TTL).
func (c *Caches) Email(next email.Store) email.Store {
	return emailStore{Store: next, c: c}
}

type emailStore struct {
	email.Store
	c *Caches
}

func (s emailStore) Repos() email.Repos {
	return emailRepos{Repos: s.Store.Repos(), c: s.c}
}

type emailRepos struct {
	email.Repos
	c *Caches
}

func (r emailRepos) EmailAddressByAddress(ctx context.Context, localPart, domain string) (account.EmailAddress, error) {
	// Only found addresses are kept: one just created elsewhere sends at
	// once.
	return r.c.senders.get(ctx, localPart+"@"+domain, func(ctx context.Context) (account.EmailAddress, error) {
		return r.Repos.EmailAddressByAddress(ctx, localPart, domain)
	}, found)
}
