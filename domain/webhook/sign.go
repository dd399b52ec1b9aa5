package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Signature is the headers that sign one attempt.
type Signature struct {
	// ID is webhook-id: the delivery id, the same on every attempt.
	ID string
	// Timestamp is webhook-timestamp and x-timestamp: unix seconds.
	Timestamp string
	// Standard is webhook-signature: "v1,<base64>" per secret, separated
	// by spaces (two during a rotation).
	Standard string
	// Legacy is x-signature: hex HMAC-SHA256 of timestamp + body keyed with
	// the whole current secret string; LegacyPrevious the same with the
	// previous secret during a rotation.
	Legacy         string
	LegacyPrevious string
}

// Signer signs with secrets whose HMAC keys are prepared once. All the
// deliveries of an endpoint use the same secrets, and preparing a key (its
// padded blocks hashed) costs about as much as signing a small payload.
// A Signer is safe for concurrent use.
type Signer struct {
	keys []signingKey
}

// signingKey is one secret's two prepared MACs, never written to: each
// signature works on a clone.
type signingKey struct {
	standard, legacy preparedMAC
}

// preparedMAC is an HMAC-SHA256 whose key schedule is computed once (Reset
// stores the hashed pads), with its key for hashes that cannot be cloned
// (the FIPS 140-3 v1.0.0 module).
type preparedMAC struct {
	key []byte
	mac hash.Hash
}

func prepare(key []byte) preparedMAC {
	mac := hmac.New(sha256.New, key)
	mac.Reset()
	return preparedMAC{key: key, mac: mac}
}

// fresh returns a MAC with the key and nothing written.
func (p preparedMAC) fresh() hash.Hash {
	if c, ok := p.mac.(hash.Cloner); ok {
		if clone, err := c.Clone(); err == nil {
			return clone
		}
	}
	return hmac.New(sha256.New, p.key)
}

// NewSigner prepares secrets (current first).
func NewSigner(secrets []string) (*Signer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no signing secret")
	}
	s := &Signer{}
	for _, secret := range secrets {
		key, err := SecretKey(secret)
		if err != nil {
			return nil, err
		}
		s.keys = append(s.keys, signingKey{standard: prepare(key), legacy: prepare([]byte(secret))})
	}
	return s, nil
}

// Sign signs body for delivery id at now.
func (s *Signer) Sign(id string, now time.Time, body []byte) Signature {
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := Signature{ID: id, Timestamp: ts}
	standard := make([]string, 0, len(s.keys))
	var sum [sha256.Size]byte
	for i, k := range s.keys {
		mac := k.standard.fresh()
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		standard = append(standard, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(sum[:0])))
		mac = k.legacy.fresh()
		mac.Write([]byte(ts))
		mac.Write(body)
		legacy := hex.EncodeToString(mac.Sum(sum[:0]))
		if i == 0 {
			sig.Legacy = legacy
		} else if sig.LegacyPrevious == "" {
			sig.LegacyPrevious = legacy
		}
	}
	sig.Standard = strings.Join(standard, " ")
	return sig
}

// SecretKey is the webhook-signature HMAC key of a secret: the base64
// part of a whsec_ secret, decoded; the bytes of the string itself for any
// other secret (one a customer chose, such as an A1Base API secret). A
// whsec_ secret whose rest is not base64 is an error.
func SecretKey(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, errors.New("a signing secret that starts with whsec_ must continue in standard base64")
	}
	return key, nil
}
