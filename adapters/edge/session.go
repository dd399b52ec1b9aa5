package edge

import (
	"crypto/hmac"
	"encoding/base64"
)

// The names a dashboard session travels under, the same for every handler
// set: the cookie that holds its token, and where a state change repeats
// the session's CSRF token.
const (
	// SessionCookie is the HttpOnly cookie that holds a session's token.
	SessionCookie = "sb_session"
	// CSRFHeader is the request header that carries the CSRF token.
	CSRFHeader = "X-CSRF-Token"
	// CSRFField is the form field of the CSRF token, for HTML forms that
	// post without script (sign-out).
	CSRFField = "csrf_token"
)

// purposeCSRF keeps the CSRF hash apart from every other keyed hash of
// the server key (the session token's own hash among them).
const purposeCSRF = "session-csrf"

// Keyring hashes values with the server key. The same purpose and value
// always hash the same. Nobody without the key can compute a hash.
type Keyring interface {
	Hash(purpose, value string) []byte
}

// CSRF derives and checks the CSRF token of a dashboard session.
//
// A session's CSRF token is a keyed hash of its session token. It needs no
// storage and changes with every session. It cannot be computed from
// anything but the session token and the server key; the stored hash of
// the session token, another purpose's hash, does not give it away.
type CSRF struct{ keys Keyring }

// NewCSRF derives CSRF tokens with keys.
func NewCSRF(keys Keyring) CSRF { return CSRF{keys: keys} }

// Token is the CSRF token of the session whose token is session.
func (c CSRF) Token(session string) string {
	return base64.RawURLEncoding.EncodeToString(c.keys.Hash(purposeCSRF, session))
}

// Check reports whether presented is the CSRF token of session, compared
// in constant time. Empty tokens never match.
func (c CSRF) Check(session, presented string) bool {
	if session == "" || presented == "" || c.keys == nil {
		return false
	}
	return hmac.Equal([]byte(c.Token(session)), []byte(presented))
}
