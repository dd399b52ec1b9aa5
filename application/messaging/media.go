package messaging

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// MediaSource is a provider that keeps the media its users send and hands
// it over on request with the number's credentials.
type MediaSource interface {
	// OpenMedia starts reading the file ref names (messaging.Content's
	// MediaRef) with the number's settings. The stream's Size is what
	// the provider declared, -1 when it declared nothing; the caller
	// closes the body.
	//
	// Errors: messaging.ErrMediaGone when the provider has no such file;
	// *ProviderError for other refusals and failures the provider
	// explained; the context's error when it ended.
	OpenMedia(ctx context.Context, settings map[string]string, ref string) (MediaStream, error)
}

// MediaStream is a media file being read from its provider.
type MediaStream struct {
	Body     io.ReadCloser
	MimeType string
	// Size is the file's length in bytes, -1 when unknown.
	Size int64
}

// Keyring hashes values with the server key. The same purpose and value
// always hash the same; nobody without the key can compute a hash.
type Keyring interface {
	Hash(purpose, value string) []byte
}

// purposeMediaLink keeps media link signatures apart from every other
// keyed hash of the server key.
const purposeMediaLink = "media-link v1"

// DefaultMediaLinkLifetime is how long a signed media link opens its file.
const DefaultMediaLinkLifetime = time.Hour

// MediaLinks signs and checks the links that open a message's media
// without credentials: base/v1/media/{accountId}/{messageId}?expires=…&signature=….
// The signature is a keyed hash of the account, the message and the
// expiry time; it cannot be made without the server key.
type MediaLinks struct {
	keys     Keyring
	base     string
	lifetime time.Duration
}

// NewMediaLinks builds the links of a server reached at base
// (https://switchboard.example.com); each is valid for lifetime after it
// is made (DefaultMediaLinkLifetime when 0 or less).
func NewMediaLinks(keys Keyring, base string, lifetime time.Duration) *MediaLinks {
	if lifetime <= 0 {
		lifetime = DefaultMediaLinkLifetime
	}
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return &MediaLinks{keys: keys, base: base, lifetime: lifetime}
}

// MediaLinkPath is the path of the signed media route, relative to the
// server's address.
func MediaLinkPath(accountID, messageID string) string {
	return "/v1/media/" + url.PathEscape(accountID) + "/" + url.PathEscape(messageID)
}

func (l *MediaLinks) signature(accountID, messageID string, expires int64) string {
	value := accountID + "\n" + messageID + "\n" + strconv.FormatInt(expires, 10)
	return base64.RawURLEncoding.EncodeToString(l.keys.Hash(purposeMediaLink, value))
}

// Link is the signed link to m's media, valid for the lifetime from now;
// empty when m carries no media kept by a provider.
func (l *MediaLinks) Link(m messaging.Message, now time.Time) string {
	if l == nil || !m.Content.KeptByProvider() {
		return ""
	}
	expires := now.Add(l.lifetime).Unix()
	q := url.Values{"expires": {strconv.FormatInt(expires, 10)}, "signature": {l.signature(m.AccountID, m.ID, expires)}}
	return l.base + MediaLinkPath(m.AccountID, m.ID) + "?" + q.Encode()
}

// Check accepts a link's expires and signature for the account and the
// message at now. The signature is compared in constant time, before the
// expiry is looked at.
//
// Errors: messaging.ErrMediaLinkInvalid for a signature that does not
// match (or a malformed expiry); messaging.ErrMediaLinkExpired for a good
// signature whose time is past.
func (l *MediaLinks) Check(accountID, messageID, expires, signature string, now time.Time) error {
	at, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || signature == "" {
		return messaging.ErrMediaLinkInvalid
	}
	if !hmac.Equal([]byte(l.signature(accountID, messageID, at)), []byte(signature)) {
		return messaging.ErrMediaLinkInvalid
	}
	if now.Unix() >= at {
		return messaging.ErrMediaLinkExpired
	}
	return nil
}

// CheckMediaLink accepts a signed media link's expires and signature for
// the account's message (see MediaLinks.Check). Without media links
// configured, every link is invalid.
func (s *Service) CheckMediaLink(accountID, messageID, expires, signature string) error {
	if s.links == nil {
		return messaging.ErrMediaLinkInvalid
	}
	return s.links.Check(accountID, messageID, expires, signature, s.now())
}

// withMediaLink is m with its media link filled in (see Content.MediaURL).
func (s *Service) withMediaLink(m messaging.Message) messaging.Message {
	return s.links.filled(m, s.now())
}

// filled is m with its media link, valid from now, filled in.
func (l *MediaLinks) filled(m messaging.Message, now time.Time) messaging.Message {
	if link := l.Link(m, now); link != "" {
		m.Content.MediaURL = link
	}
	return m
}

// withMediaLinks fills in the media links of msgs, in place.
func (s *Service) withMediaLinks(msgs []messaging.Message) []messaging.Message {
	for i := range msgs {
		msgs[i] = s.withMediaLink(msgs[i])
	}
	return msgs
}

// Media opens the media a user sent in a message of the account, from
// the provider that keeps it, with the agent number's credentials. The
// body is streamed: it never holds more of the file than a read asks for,
// and reads past the kind's limit (messaging.MaxMediaBytes) fail with
// messaging.MediaTooLarge. The caller closes the body.
//
// Errors: NotFound for a missing message, another account's, and a
// message without media kept by a provider (messaging.ErrNoMedia);
// messaging.ErrMediaGone when the provider no longer has the file;
// messaging.MediaTooLarge when the provider declares more than the limit;
// BadGateway (provider_media_failed) for other provider failures;
// NotImplemented when the number's provider keeps no media.
func (s *Service) Media(ctx context.Context, accountID, messageID string) (MediaStream, messaging.Message, error) {
	if !ident.Valid(ident.Message, messageID) {
		return MediaStream{}, messaging.Message{}, failure.NotFound("message")
	}
	r := s.store.Repos()
	m, err := r.Message(ctx, accountID, messageID)
	if err != nil {
		return MediaStream{}, messaging.Message{}, err
	}
	if !m.Content.KeptByProvider() || m.Direction != messaging.Inbound {
		return MediaStream{}, messaging.Message{}, messaging.ErrNoMedia
	}
	n, err := r.NumberByAddress(ctx, m.Service, m.To)
	if failure.Is(err, failure.KindNotFound) || (err == nil && n.AccountID != accountID) {
		return MediaStream{}, messaging.Message{}, &failure.Error{Kind: failure.KindNotFound, Code: "not_found",
			Message: "the agent number that received this media is no longer the account's"}
	}
	if err != nil {
		return MediaStream{}, messaging.Message{}, err
	}
	provider, ok := s.providers.Provider(n.Provider)
	source, keeps := provider.(MediaSource)
	if !ok || !keeps {
		return MediaStream{}, messaging.Message{}, &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: "the " + string(n.Provider) + " provider keeps no media"}
	}
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return MediaStream{}, messaging.Message{}, err
	}
	stream, err := source.OpenMedia(ctx, settings, m.Content.MediaRef)
	if err != nil {
		var pe *ProviderError
		if errors.As(err, &pe) {
			return MediaStream{}, messaging.Message{}, messaging.MediaUnavailable(err)
		}
		return MediaStream{}, messaging.Message{}, err
	}
	limit := messaging.MaxMediaBytes(m.Content.Kind)
	if stream.Size > limit {
		_ = stream.Body.Close()
		return MediaStream{}, messaging.Message{}, messaging.MediaTooLarge(m.Content.Kind, limit)
	}
	if stream.MimeType == "" {
		stream.MimeType = m.Content.MimeType
	}
	if stream.MimeType == "" {
		stream.MimeType = "application/octet-stream"
	}
	stream.Body = &cappedBody{body: stream.Body, left: limit, err: messaging.MediaTooLarge(m.Content.Kind, limit)}
	return stream, s.withMediaLink(m), nil
}

// cappedBody reads at most left bytes of body; a body that holds more
// fails with err once the limit is passed, before any byte past it is
// handed on.
type cappedBody struct {
	body io.ReadCloser
	left int64
	err  error
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var probe [1]byte
		n, err := c.body.Read(probe[:])
		if n > 0 {
			return 0, c.err
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.body.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.body.Close() }
