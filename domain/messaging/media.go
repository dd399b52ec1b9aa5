package messaging

import (
	"fmt"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// ErrNoMedia answers a request for the media of a message that carries
// none kept by a provider: not found, as for a missing message.
var ErrNoMedia = &failure.Error{Kind: failure.KindNotFound, Code: "not_found", Message: "the message has no media"}

// ErrMediaGone answers a request for media the provider no longer has
// (WhatsApp keeps a user's media for 30 days).
var ErrMediaGone = &failure.Error{Kind: failure.KindNotFound, Code: "provider_media_not_found",
	Message: "the provider no longer has this media file"}

// MediaTooLarge refuses media a provider declared or sent larger than the
// limit of its kind (MaxMediaBytes).
func MediaTooLarge(k Kind, limit int64) *failure.Error {
	return &failure.Error{Kind: failure.KindBadGateway, Code: "media_too_large",
		Message: fmt.Sprintf("the provider's %s file is larger than the %d-byte limit", k, limit)}
}

// MediaUnavailable is a provider's failure to hand over a media file.
func MediaUnavailable(cause error) *failure.Error {
	return &failure.Error{Kind: failure.KindBadGateway, Code: "provider_media_failed",
		Message: "the provider did not hand over the media file: " + cause.Error(), Err: cause}
}

// Media link refusals: a link whose signature does not match, or whose
// time is past.
var (
	ErrMediaLinkInvalid = failure.Forbidden("media_link_invalid", "the media link's signature does not match")
	ErrMediaLinkExpired = failure.Forbidden("media_link_expired", "the media link has expired; read the message again for a new one")
)
