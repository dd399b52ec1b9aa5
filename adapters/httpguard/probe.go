package httpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
)

// Prober fetches customer media through the guard to learn its type and
// size, reading at most the limit.
type Prober struct {
	client *http.Client
}

// NewProber builds a Prober on the guard's client; redirects are followed
// (each dial checked again), as media hosts often redirect to a CDN.
func (g *Guard) NewProber(timeout time.Duration) *Prober {
	return &Prober{client: g.Client(ClientOptions{Timeout: timeout, FollowRedirects: true})}
}

var _ messaging.MediaProbe = (*Prober)(nil)

// Probe GETs rawURL and reads the body up to maxBytes+1, so that both the
// declared length and the bytes actually sent are held to the limit.
func (p *Prober) Probe(ctx context.Context, rawURL string, maxBytes int64) (messaging.MediaInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return messaging.MediaInfo{}, &messaging.ProviderError{Code: "media_unreachable", Message: "media_url: " + err.Error(), Permanent: true}
	}
	req.Header.Set("User-Agent", "Switchboard media fetcher")
	resp, err := p.client.Do(req)
	if errors.Is(err, ErrForbiddenAddress) {
		// Retrying cannot make a private address public.
		return messaging.MediaInfo{}, &messaging.ProviderError{Code: "media_forbidden", Message: "media_url: " + err.Error(), Permanent: true}
	}
	if err != nil {
		return messaging.MediaInfo{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return messaging.MediaInfo{}, fmt.Errorf("media_url answered %d", resp.StatusCode)
	default:
		return messaging.MediaInfo{}, &messaging.ProviderError{Code: "media_unreachable", Message: fmt.Sprintf("media_url answered %d", resp.StatusCode), Permanent: true}
	}
	if resp.ContentLength > maxBytes {
		return messaging.MediaInfo{}, messaging.ErrMediaTooLarge
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return messaging.MediaInfo{}, fmt.Errorf("read media: %w", err)
	}
	if n > maxBytes {
		return messaging.MediaInfo{}, messaging.ErrMediaTooLarge
	}
	return messaging.MediaInfo{ContentType: resp.Header.Get("Content-Type"), Size: n}, nil
}
