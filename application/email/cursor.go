package email

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// EncodeCursor is the opaque text of a position in a newest-first email
// listing: the creation time in microseconds and the id.
func EncodeCursor(c EmailCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + ":" + c.ID))
}

// DecodeCursor reads a cursor EncodeCursor wrote; anything else is a
// problem on field.
func DecodeCursor(s, field string) (*EmailCursor, error) {
	bad := failure.Invalid(failure.Field("value_error", "cursor is not a cursor this listing returned", field))
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	at, id, ok := strings.Cut(string(raw), ":")
	micros, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !ident.Valid(ident.Email, id) {
		return nil, bad
	}
	return &EmailCursor{CreatedAt: time.UnixMicro(micros).UTC(), ID: id}, nil
}
