// Package keyring derives every secret the service needs from one server key
// (SWITCHBOARD_SECRET_KEY): keyed hashes of API credentials, and authenticated
// encryption of provider tokens at rest. Subkeys are derived with HKDF, one per
// purpose, so that a hash can never be replayed as a ciphertext key and a
// leaked database alone reveals no credential.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinKeyLength is the shortest server key accepted: 32 bytes of entropy.
const MinKeyLength = 32

// Keyring holds the derived subkeys. It is safe for concurrent use.
type Keyring struct {
	macKey []byte
	aead   cipher.AEAD
	// macs pools keyed HMAC states: Reset returns one to its keyed state,
	// which saves re-deriving the pads on every request.
	macs sync.Pool
}

// New derives the subkeys from the server key.
func New(serverKey []byte) (*Keyring, error) {
	if len(serverKey) < MinKeyLength {
		return nil, fmt.Errorf("server key must be at least %d bytes, got %d", MinKeyLength, len(serverKey))
	}
	macKey, err := hkdf.Key(sha256.New, serverKey, nil, "switchboard credential hash v1", 32)
	if err != nil {
		return nil, fmt.Errorf("derive hash key: %w", err)
	}
	encKey, err := hkdf.Key(sha256.New, serverKey, nil, "switchboard sealed settings v1", 32)
	if err != nil {
		return nil, fmt.Errorf("derive encryption key: %w", err)
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("encryption mode: %w", err)
	}
	k := &Keyring{macKey: macKey, aead: aead}
	k.macs.New = func() any { return hmac.New(sha256.New, k.macKey) }
	return k, nil
}

// Hash returns the keyed hash (HMAC-SHA256) of a secret value, domain-separated
// by purpose ("api-key", "api-secret") so equal inputs of different kinds hash
// differently. It is fast on purpose: the inputs are long random strings, so a
// slow password hash would add latency to every request and no security.
func (k *Keyring) Hash(purpose, value string) []byte {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	sum := m.Sum(nil)
	k.macs.Put(m)
	return sum
}

// sealVersion prefixes every ciphertext so the format can change later.
const sealVersion = 1

// Seal encrypts plaintext; context binds the ciphertext to its owner (for
// example a number id), so that a sealed value copied to another row fails to
// open.
func (k *Keyring) Seal(plaintext []byte, context string) []byte {
	nonce := make([]byte, k.aead.NonceSize(), 1+k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	_, _ = rand.Read(nonce)
	out := append([]byte{sealVersion}, nonce...)
	return k.aead.Seal(out, nonce, plaintext, []byte(context))
}

// ErrSealBroken is returned when a sealed value was tampered with, was sealed
// under another server key, or belongs to another context.
var ErrSealBroken = errors.New("sealed value cannot be opened with this server key")

// Open decrypts a value made by Seal with the same context.
func (k *Keyring) Open(sealed []byte, context string) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < 1+n+k.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrSealBroken
	}
	plain, err := k.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(context))
	if err != nil {
		return nil, ErrSealBroken
	}
	return plain, nil
}
