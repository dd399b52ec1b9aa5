package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// Sign signs body for delivery id at now with secrets (current first).
func Sign(secrets []string, id string, now time.Time, body []byte) (Signature, error) {
	if len(secrets) == 0 {
		return Signature{}, errors.New("no signing secret")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := Signature{ID: id, Timestamp: ts}
	var standard []string
	for i, secret := range secrets {
		key, err := SecretKey(secret)
		if err != nil {
			return Signature{}, err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		standard = append(standard, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		legacy := LegacySignature(secret, ts, body)
		if i == 0 {
			sig.Legacy = legacy
		} else if sig.LegacyPrevious == "" {
			sig.LegacyPrevious = legacy
		}
	}
	sig.Standard = strings.Join(standard, " ")
	return sig, nil
}

// SecretKey is the HMAC key of a whsec_ secret: its base64 part, decoded.
func SecretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, errors.New("signing secret is not whsec_ and base64")
	}
	return key, nil
}

// LegacySignature is x-signature: hex HMAC-SHA256 of the timestamp
// followed by the raw body, keyed with the secret string as shown.
func LegacySignature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
