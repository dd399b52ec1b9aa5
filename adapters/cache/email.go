package cache

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// senderAnswer is a sender address lookup's answer; only found addresses
// are kept, so an address just created on another replica sends at once.
type senderAnswer struct {
	address account.EmailAddress
	err     error
}

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
	a, err := r.c.senders.get(ctx, localPart+"@"+domain, func(ctx context.Context) senderAnswer {
		addr, err := r.Repos.EmailAddressByAddress(ctx, localPart, domain)
		return senderAnswer{addr, err}
	}, func(a senderAnswer) bool { return a.err == nil })
	if err != nil {
		return account.EmailAddress{}, err
	}
	return a.address, a.err
}
