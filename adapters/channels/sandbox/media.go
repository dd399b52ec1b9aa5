package sandbox

import (
	"context"
	"net/http"

	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ messaging.MediaSource = Provider{}

// OpenMedia streams the file of a simulated inbound media message: the
// sandbox keeps a user's file at the URL the simulation gave (ref), and
// fetches it through Media, the SSRF-safe client, as a provider fetches
// its own. A 404 there is media the provider no longer has.
func (p Provider) OpenMedia(ctx context.Context, _ map[string]string, ref string) (messaging.MediaStream, error) {
	if p.Media == nil {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_misconfigured", Message: "the sandbox has no media client", Permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "media_unreachable", Message: "the simulated media URL is not a URL", Permanent: true}
	}
	res, err := p.Media.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return messaging.MediaStream{}, ctx.Err()
		}
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "media_unreachable", Message: "the simulated media URL: " + err.Error()}
	}
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		_ = res.Body.Close()
		return messaging.MediaStream{}, domain.ErrMediaGone
	case res.StatusCode >= 300:
		_ = res.Body.Close()
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "media_unreachable", Message: "the simulated media URL answered " + res.Status}
	}
	return messaging.MediaStream{Body: res.Body, MimeType: res.Header.Get("Content-Type"), Size: res.ContentLength}, nil
}
