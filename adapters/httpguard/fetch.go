package httpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/profiles"
)

// Fetcher downloads customer files (email attachments, profile pictures)
// through the guard, holding them to a size limit.
type Fetcher struct {
	client *http.Client
}

// NewFetcher builds a Fetcher on the guard's client; redirects are
// followed, each dial checked again.
func (g *Guard) NewFetcher(timeout time.Duration) *Fetcher {
	return &Fetcher{client: g.Client(ClientOptions{Timeout: timeout, FollowRedirects: true})}
}

// download is a file a GET answered with 2xx, read whole.
type download struct {
	header http.Header
	data   []byte
}

// errTooLarge is a download over its limit.
var errTooLarge = errors.New("larger than the limit")

// statusError is a GET answered with a status other than 2xx; transient
// for 408, 429 and 5xx.
type statusError struct {
	status    int
	transient bool
}

func (e *statusError) Error() string { return fmt.Sprintf("answered %d", e.status) }

// get GETs rawURL as agent and reads at most maxBytes of a 2xx answer: a
// larger declared length or more bytes sent is errTooLarge, another status
// a *statusError; a forbidden address wraps ErrForbiddenAddress.
func (f *Fetcher) get(ctx context.Context, rawURL, agent string, maxBytes int64) (download, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return download{}, &statusError{status: 0}
	}
	req.Header.Set("User-Agent", agent)
	resp, err := f.client.Do(req)
	if err != nil {
		return download{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return download{}, &statusError{status: resp.StatusCode, transient: true}
	default:
		return download{}, &statusError{status: resp.StatusCode}
	}
	if resp.ContentLength > maxBytes {
		return download{}, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return download{}, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return download{}, errTooLarge
	}
	return download{header: resp.Header, data: data}, nil
}

var _ appemail.Fetcher = (*Fetcher)(nil)

// Fetch GETs rawURL and reads at most maxBytes: a larger declared length
// or more bytes sent is appemail.ErrAttachmentTooLarge. Forbidden
// addresses and 4xx answers are *appemail.FetchError (permanent); 5xx,
// 408, 429 and network errors are plain errors (retried).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxBytes int64) (appemail.Attachment, error) {
	d, err := f.get(ctx, rawURL, "Switchboard attachment fetcher", maxBytes)
	var se *statusError
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_forbidden", Message: "attachment_uri: " + err.Error()}
	case errors.Is(err, errTooLarge):
		return appemail.Attachment{}, appemail.ErrAttachmentTooLarge
	case errors.As(err, &se) && se.status == 0:
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_unreachable", Message: "attachment_uri is not a URL"}
	case errors.As(err, &se) && se.transient:
		return appemail.Attachment{}, fmt.Errorf("attachment_uri %w", se)
	case errors.As(err, &se):
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_unreachable", Message: "attachment_uri " + se.Error()}
	case err != nil:
		return appemail.Attachment{}, err
	}
	att := appemail.Attachment{ContentType: mediaType(d.header.Get("Content-Type"), "application/octet-stream"), Data: d.data}
	if _, params, err := mime.ParseMediaType(d.header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		att.Name = params["filename"]
	}
	return att, nil
}

// mediaType is the media type of a Content-Type value, or fallback when it
// has none.
func mediaType(contentType, fallback string) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt != "" {
		return mt
	}
	return fallback
}

// forbiddenPicture is a picture fetch refused for its address: it is
// profiles.ErrForbiddenAddress, and says which address.
type forbiddenPicture struct{ error }

func (forbiddenPicture) Is(target error) bool { return target == profiles.ErrForbiddenAddress }

// Pictures fetches profile pictures (profiles.Pictures) with a Fetcher.
type Pictures struct{ *Fetcher }

var _ profiles.Pictures = Pictures{}

// Fetch GETs rawURL and reads at most maxBytes: a larger declared length
// or more bytes sent is profiles.ErrPictureTooLarge; a forbidden address
// wraps profiles.ErrForbiddenAddress; any other failure says what the URL
// answered.
func (p Pictures) Fetch(ctx context.Context, rawURL string, maxBytes int64) (profiles.Fetched, error) {
	d, err := p.get(ctx, rawURL, "Switchboard picture fetcher", maxBytes)
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return profiles.Fetched{}, forbiddenPicture{err}
	case errors.Is(err, errTooLarge):
		return profiles.Fetched{}, profiles.ErrPictureTooLarge
	case err != nil:
		return profiles.Fetched{}, err
	}
	return profiles.Fetched{ContentType: mediaType(d.header.Get("Content-Type"), ""), Data: d.data}, nil
}
