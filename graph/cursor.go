package graph

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Cursors are opaque to clients: base64url of "<kind>|<RFC 3339 time>|<id>",
// a position in a keyset order, so that pages stay stable while new rows
// arrive. These are the cursors of threads and emails; a message's cursor
// is application/messaging's token (MessageCursor.Token), bound to its
// thread and shared with REST's get-messages.

func encodeCursor(kind string, at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "|" + at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

// decodeCursor reads a cursor of kind; a malformed one is a validation
// error on the argument named field.
func decodeCursor(kind, field, cursor string) (time.Time, string, error) {
	invalid := failure.Invalid(failure.Field("value_error", field+" is not a cursor this field returned", field))
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", invalid
	}
	parts := strings.SplitN(string(raw), "|", 3)
	if len(parts) != 3 || parts[0] != kind || parts[2] == "" {
		return time.Time{}, "", invalid
	}
	at, err := time.Parse(time.RFC3339Nano, parts[1])
	if err != nil {
		return time.Time{}, "", invalid
	}
	return at, parts[2], nil
}
