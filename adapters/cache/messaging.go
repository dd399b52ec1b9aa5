package cache

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Messaging decorates the messaging use cases' store: outside a
// transaction, a send's sending number and individual thread come from
// the caches.
//
// A number is kept for the TTL: one disabled through this process is read
// again at once (Accounts forgets them), one disabled elsewhere within the
// TTL; delivery reads the number afresh, so a message accepted in that
// window is refused before it reaches the channel. A thread is kept once
// its user has written to the agent number, after which it stays sendable
// until its account is deleted; a thread the user has not written in is
// read again at every send, so the first send after the user's first
// message goes. A kept thread answers only while its customer service
// window (if it has one) is open: a window only moves forward, so a kept
// open one is open in the database too, while a kept closed one may have
// been opened again by the user's new message and is read again.
func (c *Caches) Messaging(next messaging.Store) messaging.Store {
	return messagingStore{Store: next, c: c}
}

type messagingStore struct {
	messaging.Store
	c *Caches
}

func (s messagingStore) Repos() messaging.Repos {
	return messagingRepos{Repos: s.Store.Repos(), c: s.c}
}

type messagingRepos struct {
	messaging.Repos
	c *Caches
}

func (r messagingRepos) NumberByAddress(ctx context.Context, service account.Service, number string) (account.Number, error) {
	// Only found numbers are kept: a number just added on another replica
	// sends at once.
	return r.c.numbers.get(ctx, string(service)+" "+number, func(ctx context.Context) (account.Number, error) {
		return r.Repos.NumberByAddress(ctx, service, number)
	}, found)
}

func (r messagingRepos) IndividualThread(ctx context.Context, accountID string, service account.Service, agentNumber, contact string) (domain.Thread, error) {
	key := accountID + " " + string(service) + " " + agentNumber + " " + contact
	windowOpen := func(t domain.Thread) bool { return t.WindowOpen(time.Now()) }
	return r.c.threads.getIf(ctx, key, windowOpen, func(ctx context.Context) (domain.Thread, error) {
		return r.Repos.IndividualThread(ctx, accountID, service, agentNumber, contact)
	}, func(a answer[domain.Thread]) bool { return a.err == nil && domain.CheckIndividualSend(&a.value) == nil })
}
