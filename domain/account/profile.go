package account

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Profile is the display name and picture an agent number shows its users,
// as the account last set them (A1Base's profile settings). The provider
// behind the number applies what its platform lets an API change; the
// stored values are the account's wish either way.
type Profile struct {
	// Name is the display name; empty when never set.
	Name string
	// PictureURL is the URL the picture was fetched from; empty when never
	// set.
	PictureURL string
	// UpdatedAt is when either was last set; nil when never.
	UpdatedAt *time.Time
}

// ProfileChange sets the fields of a number's profile that are not nil,
// at At; the others keep their stored values.
type ProfileChange struct {
	Name       *string
	PictureURL *string
	At         time.Time
}

// MaxProfileNameLength is the longest display name an agent number on
// service may have, in characters: Telegram's bot names are 0-64
// characters (setMyName); other services are held to 256.
func MaxProfileNameLength(service Service) int {
	if service == Telegram {
		return 64
	}
	return 256
}

// CheckProfileName validates a display name for a number on service: not
// blank, valid UTF-8 without control characters, and within the service's
// length (MaxProfileNameLength). It returns the name without surrounding
// spaces.
func CheckProfileName(name string, service Service) (string, error) {
	n := strings.TrimSpace(name)
	limit := MaxProfileNameLength(service)
	switch {
	case n == "":
		return "", failure.Invalid(failure.Field("string_too_short", "name must not be empty", "name"))
	case !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", failure.Invalid(failure.Field("value_error", "name must be text without control characters", "name"))
	case utf8.RuneCountInString(n) > limit:
		return "", failure.Invalid(failure.Field("string_too_long", fmt.Sprintf("name must be at most %d characters on %s", limit, service), "name"))
	}
	return n, nil
}
