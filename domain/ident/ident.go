// Package ident makes the opaque, prefixed ids every resource carries
// ("acc_…", "msg_…"). The prefix tells a human what an id names; the rest is
// 128 bits of randomness, so ids cannot be guessed or enumerated.
package ident

import (
	"crypto/rand"
	"strings"
)

// Prefixes of the resources the service names.
const (
	Account    = "acc"
	Credential = "key"
	Number     = "num"
	Email      = "eml"
	Domain     = "dom"
	Message    = "msg"
	Thread     = "thr"
	Event      = "evt"
	Webhook    = "whk"
	CronJob    = "crn"
	Execution  = "exe"
	Job        = "job"
)

// alphabet is lower-case base32 without padding: URL-safe, case-insensitive
// friendly, and unambiguous in logs.
const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// New returns prefix + "_" + 26 random base32 characters (130 bits).
func New(prefix string) string {
	var raw [26]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on supported platforms
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(raw))
	b.WriteString(prefix)
	b.WriteByte('_')
	for _, c := range raw {
		b.WriteByte(alphabet[c&31])
	}
	return b.String()
}

// Valid reports whether id looks like an id with the given prefix. Use it to
// answer "not found" early, without a database round trip, for ids that cannot
// exist.
func Valid(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(rest) == 0 || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
