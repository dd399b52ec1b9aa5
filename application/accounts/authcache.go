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
}

const authCacheMax = 10000

func newAuthCache(ttl time.Duration, now func() time.Time) *authCache {
	return &authCache{ttl: ttl, now: now, entries: map[string]authEntry{}}
}

func (c *authCache) get(keyHash []byte) (account.Credential, bool) {
	if c.ttl <= 0 {
		return account.Credential{}, false
	}
	c.mu.RLock()
	e, ok := c.entries[string(keyHash)]
	c.mu.RUnlock()
	if !ok || !c.now().Before(e.expires) {
		return account.Credential{}, false
	}
	return e.credential, true
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
	c.entries[string(keyHash)] = authEntry{credential: cred, expires: now.Add(c.ttl)}
}

func (c *authCache) forget(keyHash []byte) {
	c.mu.Lock()
	delete(c.entries, string(keyHash))
	c.mu.Unlock()
}
