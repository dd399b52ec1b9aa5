package store

import (
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// Sending numbers, kept for a while.
//
// Every send reads its sending number (is it this account's, is it
// enabled?), and numbers change rarely. A number found is kept for
// Options.NumberTTL (the API's auth cache TTL in the server): a number
// disabled through this process is read again at once, one disabled
// through another replica within the TTL, as a revoked key is. Delivery
// reads the number afresh (MessagesToDeliver), so a message accepted in
// that window is still refused before it reaches the channel. Numbers not
// found are never kept: a number just added on another replica sends at
// once.

// maxKeptNumbers bounds the cache; past it, it starts again empty.
const maxKeptNumbers = 100_000

type numberCache struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	kept map[string]keptNumber
}

type keptNumber struct {
	n     account.Number
	until time.Time
	// refreshAt starts, for the one send that sees it pass, a read of the
	// number in the background (as the auth cache does), so the sends of
	// a busy number never wait for its read.
	refreshAt  time.Time
	refreshing bool
}

// get returns the kept number, and refresh true for the one caller that
// should read it again now, in the background.
func (c *numberCache) get(key string) (n account.Number, ok, refresh bool) {
	if c.ttl <= 0 {
		return account.Number{}, false, false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.kept[key]
	if !ok || !now.Before(k.until) {
		return account.Number{}, false, false
	}
	if !now.Before(k.refreshAt) && !k.refreshing {
		k.refreshing, refresh = true, true
		c.kept[key] = k
	}
	return k.n, true, refresh
}

func (c *numberCache) put(key string, n account.Number) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept == nil || len(c.kept) >= maxKeptNumbers {
		c.kept = map[string]keptNumber{}
	}
	now := c.now()
	c.kept[key] = keptNumber{n: n, until: now.Add(c.ttl), refreshAt: now.Add(c.ttl - c.ttl/5)}
}

// forget drops every kept number, when this process changes one.
func (c *numberCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.kept)
}

// drop forgets one number, found gone.
func (c *numberCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.kept, key)
}
