package messaging

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// A message cursor travels to clients as an opaque token: base64url of
// "m1|<thread id>|<created_at, RFC 3339 with nanoseconds>|<message id>|<check>",
// where check is the first 8 bytes of the SHA-256 of everything before it.
// REST (get-messages' before and next_cursor) and GraphQL (Thread.messages'
// after and edge cursors, Thread.transcript) speak the same tokens.
//
// The token names its thread, so that a token of another thread (and so of
// another account) is refused instead of silently positioning a page in a
// thread it was not made for. The check catches tokens that were edited or
// cut short. It is deliberately not a keyed MAC: a token grants nothing,
// because every page is read within the account and the thread the request
// names, so a forged token can only choose a position in a thread its holder
// may read whole.
const (
	cursorVersion  = "m1"
	cursorCheckLen = 8
	// maxCursorLength bounds what is decoded: a real token is about 150
	// characters.
	maxCursorLength = 512
)

// MessageCursorOf is the position of m in its thread's newest-first order:
// a page that starts after it holds the messages older than m.
func MessageCursorOf(m messaging.Message) MessageCursor {
	return MessageCursor{CreatedAt: m.CreatedAt, ID: m.ID}
}

// Token is the cursor as a client receives it, bound to the thread
// threadID.
func (c MessageCursor) Token(threadID string) string {
	body := cursorVersion + "|" + threadID + "|" + c.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(body + "|" + cursorCheck(body)))
}

func cursorCheck(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:cursorCheckLen])
}

// ParseMessageCursor reads a token that Token made for the thread
// threadID. A token that is not one (malformed, edited, or made for
// another thread) is a failure of kind Invalid on the query parameter or
// argument named field.
func ParseMessageCursor(threadID, token, field string) (MessageCursor, error) {
	invalid := func(msg string) (MessageCursor, error) {
		return MessageCursor{}, failure.Invalid(failure.FieldError{In: "query", Path: []any{field}, Message: msg, Type: "value_error"})
	}
	notACursor := func() (MessageCursor, error) {
		return invalid(field + " is not a cursor this thread's pages returned: it is malformed or was altered")
	}
	if len(token) > maxCursorLength {
		return notACursor()
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return notACursor()
	}
	body, check, ok := splitCheck(string(raw))
	if !ok || check != cursorCheck(body) {
		return notACursor()
	}
	parts := strings.Split(body, "|")
	if len(parts) != 4 || parts[0] != cursorVersion || !ident.Valid(ident.Message, parts[3]) {
		return notACursor()
	}
	at, err := time.Parse(time.RFC3339Nano, parts[2])
	if err != nil {
		return notACursor()
	}
	if parts[1] != threadID {
		return invalid(field + " is a cursor of another thread; page a thread with the cursors its own pages returned")
	}
	return MessageCursor{CreatedAt: at, ID: parts[3]}, nil
}

// splitCheck splits a decoded token into what its check covers and the
// check.
func splitCheck(raw string) (body, check string, ok bool) {
	i := strings.LastIndexByte(raw, '|')
	if i < 0 {
		return "", "", false
	}
	return raw[:i], raw[i+1:], true
}
