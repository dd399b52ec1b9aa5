package whatsapp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ messaging.MediaSource = (*Provider)(nil)

// mediaObject is the Graph API's answer to GET /{media-id}: where the
// file is downloaded from (with the same access token), and what it is.
type mediaObject struct {
	URL      string `json:"url"`
	MimeType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	FileSize int64  `json:"file_size"`
	ID       string `json:"id"`
}

// OpenMedia reads the media object ref (a media id of an inbound
// message), then starts the download of the URL it names with the same
// access token. The download URL is the Graph API's own answer: it must be
// https, or http when the number's api_base_url is http (a local server),
// and is fetched with the provider's client like every Graph API call.
func (p *Provider) OpenMedia(ctx context.Context, settings map[string]string, ref string) (messaging.MediaStream, error) {
	if ref == "" || ref == "." || ref == ".." {
		return messaging.MediaStream{}, domain.ErrMediaGone
	}
	res, err := p.Client.send(ctx, settings, http.MethodGet, baseURL(settings)+"/"+url.PathEscape(ref), nil)
	if err != nil {
		return messaging.MediaStream{}, err
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	if err != nil {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "reading the Graph API answer: " + err.Error()}
	}
	if res.StatusCode >= 300 {
		return messaging.MediaStream{}, mediaFailure(res, raw)
	}
	var obj mediaObject
	if err := json.Unmarshal(raw, &obj); err != nil {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API's media object is not JSON"}
	}
	target, err := url.Parse(obj.URL)
	base, _ := url.Parse(baseURL(settings))
	if err != nil || target.Host == "" || !(target.Scheme == "https" || (target.Scheme == "http" && base != nil && base.Scheme == "http")) {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API's media object has no usable download URL"}
	}
	res, err = p.Client.send(ctx, settings, http.MethodGet, target.String(), nil)
	if err != nil {
		return messaging.MediaStream{}, err
	}
	if res.StatusCode >= 300 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		_ = res.Body.Close()
		return messaging.MediaStream{}, mediaFailure(res, raw)
	}
	size := res.ContentLength
	if obj.FileSize > 0 && obj.FileSize > size {
		size = obj.FileSize
	}
	mime := obj.MimeType
	if mime == "" {
		mime = res.Header.Get("Content-Type")
	}
	return messaging.MediaStream{Body: res.Body, MimeType: mime, Size: size}, nil
}

// mediaFailure is the error of a failed media lookup or download: a media
// id the Graph API does not know (404, or error 100 with subcode 33, "does
// not exist") is gone; anything else is the Graph API's failure.
func mediaFailure(res *http.Response, raw []byte) error {
	var e struct {
		Error *GraphError `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	if res.StatusCode == http.StatusNotFound || (e.Error != nil && e.Error.Code == 100 && e.Error.ErrorSubcode == 33) {
		return domain.ErrMediaGone
	}
	return graphFailure(res, raw)
}
