package sandbox

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
)

var _ profiles.Provider = Provider{}

// SetProfileName applies the name at once: the sandbox shows nobody.
func (Provider) SetProfileName(context.Context, account.Number, map[string]string, string) (profiles.Outcome, error) {
	return profiles.Outcome{Applied: true}, nil
}

// SetProfilePicture applies the picture at once (it was fetched and
// checked like any other provider's).
func (Provider) SetProfilePicture(context.Context, account.Number, map[string]string, profiles.Picture) (profiles.Outcome, error) {
	return profiles.Outcome{Applied: true}, nil
}
