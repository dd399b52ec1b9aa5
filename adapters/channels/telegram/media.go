package telegram

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ messaging.MediaSource = (*Provider)(nil)

// fileInfo is the Bot API's File: where getFile put the file for
// download, valid for at least an hour.
type fileInfo struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size"`
	FilePath     string `json:"file_path"`
}

// errFileTooBig is the Bot API's refusal to hand a bot a file over 20 MB.
var errFileTooBig = &failure.Error{Kind: failure.KindBadGateway, Code: "media_too_large",
	Message: "the Bot API hands bots files of at most 20 MB"}

// OpenMedia asks getFile for the file_id ref, then streams
// {api_base_url}/file/bot<token>/<file_path>. A file_id the Bot API does
// not know, or a file it no longer serves, is gone.
func (p *Provider) OpenMedia(ctx context.Context, settings map[string]string, ref string) (messaging.MediaStream, error) {
	var f fileInfo
	if err := p.Client.Call(ctx, settings, "getFile", map[string]any{"file_id": ref}, &f); err != nil {
		var pe *messaging.ProviderError
		if errors.As(err, &pe) && pe.Code == "media_unreachable" {
			if strings.Contains(strings.ToLower(pe.Message), "too big") {
				return messaging.MediaStream{}, errFileTooBig
			}
			return messaging.MediaStream{}, domain.ErrMediaGone
		}
		return messaging.MediaStream{}, err
	}
	if f.FilePath == "" || strings.HasPrefix(f.FilePath, "/") || slices.Contains(strings.Split(f.FilePath, "/"), "..") {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "getFile answered no usable file_path"}
	}
	token := settings[SettingBotToken]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiBase(settings)+"/file/bot"+token+"/"+f.FilePath, nil)
	if err != nil {
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_misconfigured", Message: "api_base_url is not a URL", Permanent: true}
	}
	res, err := p.Client.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return messaging.MediaStream{}, ctx.Err()
		}
		// The URL holds the token: never let it reach a log.
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API file server cannot be reached: " + redact(err.Error(), token)}
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		_ = res.Body.Close()
		return messaging.MediaStream{}, domain.ErrMediaGone
	case res.StatusCode >= 300:
		_ = res.Body.Close()
		return messaging.MediaStream{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API file server answered " + res.Status}
	}
	size := res.ContentLength
	if f.FileSize > 0 && f.FileSize > size {
		size = f.FileSize
	}
	// The file server says application/octet-stream of every file: the
	// type the update gave, kept on the message, is the better one.
	mimeType := res.Header.Get("Content-Type")
	if strings.HasPrefix(mimeType, "application/octet-stream") {
		mimeType = ""
	}
	return messaging.MediaStream{Body: res.Body, MimeType: mimeType, Size: size}, nil
}
