package accounts

import (
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// authCache remembers credential rows by key hash for a short time, so that
// an authenticated request costs one HMAC and no database read. Entries are
// bounded in number; when full, expired entries are swept and, failing that,
// the cache is cleared (a cheap, safe fallback: it only costs reads).
type authCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.RWMutex
	entries map[string]authEntry
}

type authEntry struct {
	credential account.Credential
	expires    time.Time
	// refreshAt is when a request using the entry starts reading it again
	// in the background, so that the requests of a busy key never wait for
	// its read; refreshing is set once one has.
	refreshAt  time.Time
	refreshing bool
}

// refreshShare is the last part of the TTL in which an entry in use is read
// again ahead of its expiry.
const refreshShare = 5

const authCacheMax = 10000

func newAuthCache(ttl time.Duration, now func() time.Time) *authCache {
	return &authCache{ttl: ttl, now: now, entries: map[string]authEntry{}}
}

// get returns the kept credential, and refresh true for the one caller
// that should read it again now, in the background: the entry is in the
// last fifth of its TTL. The entry is never used past its expiry.
func (c *authCache) get(keyHash []byte) (cred account.Credential, ok, refresh bool) {
	if c.ttl <= 0 {
		return account.Credential{}, false, false
	}
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[string(keyHash)]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return account.Credential{}, false, false
	}
	if !now.Before(e.refreshAt) && !e.refreshing {
		c.mu.Lock()
		if cur, still := c.entries[string(keyHash)]; still && cur.expires.Equal(e.expires) && !cur.refreshing {
			cur.refreshing, refresh = true, true
			c.entries[string(keyHash)] = cur
		}
		c.mu.Unlock()
	}
	return e.credential, true, refresh
}

func (c *authCache) put(keyHash []byte, cred account.Credential) {
	if c.ttl <= 0 {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= authCacheMax {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= authCacheMax {
			clear(c.entries)
		}
	}
	c.entries[string(keyHash)] = authEntry{credential: cred, expires: now.Add(c.ttl), refreshAt: now.Add(c.ttl - c.ttl/refreshShare)}
}

func (c *authCache) forget(keyHash []byte) {
	c.mu.Lock()
	delete(c.entries, string(keyHash))
	c.mu.Unlock()
}
