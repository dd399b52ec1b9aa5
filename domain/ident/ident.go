// Package ident makes the opaque, prefixed ids every resource carries
// ("acc_…", "msg_…"). The prefix tells a human what an id names. The rest
// starts with the creation time, so ids made later sort later, and ends with
// 80 bits of randomness, so ids cannot be guessed or enumerated.
package ident

import (
	"crypto/rand"
	"strings"
	"time"
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
	Contact    = "con"
	// EmailThread names a conversation of emails; Attachment a file a
	// received email carries; Spooled a received message kept whole.
	EmailThread = "eth"
	Attachment  = "att"
	Spooled     = "inm"
	// Erasure names the record of the erasure of a person.
	Erasure = "era"
	// Process names a running switchboard process in the database's
	// registry of the processes that run background work.
	Process = "prc"
)

// alphabet is lower-case base32 without padding, URL-safe and unambiguous in
// logs, with its digits first so that it is in byte order: a base32 number
// written in it sorts as text the way it sorts as a number.
const alphabet = "234567abcdefghijklmnopqrstuvwxyz"

const (
	timeChars   = 10 // 50 bits of Unix milliseconds: enough until the year 37000
	randomChars = 16 // 80 bits
)

// New returns prefix + "_" + 26 base32 characters: the Unix time in
// milliseconds, then 80 random bits.
//
// The time comes first because ids are primary keys. Rows made one after the
// other then land on the last page of their primary-key index, where Postgres
// inserts without descending the tree, rather than each on a random page of an
// index that outgrows the cache and whose every touched page is written again
// (and copied whole into the WAL after a checkpoint). Ids are still
// unguessable: 80 bits are random, and every lookup is scoped to an account.
func New(prefix string) string {
	return newAt(prefix, time.Now())
}

func newAt(prefix string, at time.Time) string {
	var raw [randomChars]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails on supported platforms
	var b strings.Builder
	b.Grow(len(prefix) + 1 + timeChars + randomChars)
	b.WriteString(prefix)
	b.WriteByte('_')
	ms := uint64(at.UnixMilli())
	for shift := 5 * (timeChars - 1); shift >= 0; shift -= 5 {
		b.WriteByte(alphabet[ms>>shift&31])
	}
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
