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
)

// Fetcher downloads customer files (email attachments) through the guard,
// holding them to a size limit.
type Fetcher struct {
	client *http.Client
}

// NewFetcher builds a Fetcher on the guard's client; redirects are
// followed, each dial checked again.
func (g *Guard) NewFetcher(timeout time.Duration) *Fetcher {
	return &Fetcher{client: g.Client(ClientOptions{Timeout: timeout, FollowRedirects: true})}
}

var _ appemail.Fetcher = (*Fetcher)(nil)

// Fetch GETs rawURL and reads at most maxBytes: a larger declared length
// or more bytes sent is appemail.ErrAttachmentTooLarge. Forbidden
// addresses and 4xx answers are *appemail.FetchError (permanent); 5xx,
// 408, 429 and network errors are plain errors (retried).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxBytes int64) (appemail.Attachment, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_unreachable", Message: "attachment_uri: " + err.Error()}
	}
	req.Header.Set("User-Agent", "Switchboard attachment fetcher")
	resp, err := f.client.Do(req)
	if errors.Is(err, ErrForbiddenAddress) {
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_forbidden", Message: "attachment_uri: " + err.Error()}
	}
	if err != nil {
		return appemail.Attachment{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return appemail.Attachment{}, fmt.Errorf("attachment_uri answered %d", resp.StatusCode)
	default:
		return appemail.Attachment{}, &appemail.FetchError{Code: "attachment_unreachable", Message: fmt.Sprintf("attachment_uri answered %d", resp.StatusCode)}
	}
	if resp.ContentLength > maxBytes {
		return appemail.Attachment{}, appemail.ErrAttachmentTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return appemail.Attachment{}, fmt.Errorf("read attachment: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return appemail.Attachment{}, appemail.ErrAttachmentTooLarge
	}
	att := appemail.Attachment{ContentType: resp.Header.Get("Content-Type"), Data: data}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		att.Name = params["filename"]
	}
	if mt, _, err := mime.ParseMediaType(att.ContentType); err != nil || mt == "" {
		att.ContentType = "application/octet-stream"
	} else {
		att.ContentType = mt
	}
	return att, nil
}
