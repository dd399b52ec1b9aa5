package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// SettingAppID names the setting of a number's Meta app id, which the
// Resumable Upload API keeps uploads under (optional; without it the
// number's profile picture cannot be set).
const SettingAppID = "app_id"

var _ profiles.Provider = (*Provider)(nil)

// NameNotApplied says why a WhatsApp Cloud API number's display name is
// stored but not applied.
const NameNotApplied = "the WhatsApp Cloud API cannot change a display name: Meta reviews display name changes, " +
	"which are made in WhatsApp Manager; the name is stored"

// SetProfileName applies nothing: a business number's display name is
// changed in WhatsApp Manager and reviewed by Meta, never through the API.
func (p *Provider) SetProfileName(context.Context, account.Number, map[string]string, string) (profiles.Outcome, error) {
	return profiles.Outcome{Reason: NameNotApplied}, nil
}

// SetProfilePicture makes the picture the business profile's photo, in
// three calls: an upload session of the number's Meta app (POST
// /{app-id}/uploads?file_name=&file_length=&file_type= → {"id":
// "upload:…"}), the bytes (POST /{upload-id} with "Authorization: OAuth
// <token>" and "file_offset: 0" → {"h": "<handle>"}), and the profile
// (POST /{phone-number-id}/whatsapp_business_profile {"messaging_product":
// "whatsapp", "profile_picture_handle": "<handle>"}). Without the app_id
// setting it applies nothing and says so.
func (p *Provider) SetProfilePicture(ctx context.Context, n account.Number, settings map[string]string, pic profiles.Picture) (profiles.Outcome, error) {
	app := settings[SettingAppID]
	if app == "" {
		return profiles.Outcome{Reason: n.Number + " has no app_id setting (its Meta app id, which the Resumable Upload API needs " +
			"to take the picture): add it with switchboard numbers add --app-id; the picture URL is stored"}, nil
	}
	q := url.Values{"file_name": {"profile" + extension(pic.ContentType)}, "file_length": {strconv.Itoa(len(pic.Data))}, "file_type": {pic.ContentType}}
	var session struct {
		ID string `json:"id"`
	}
	if err := p.Client.call(ctx, settings, http.MethodPost, "/"+url.PathEscape(app)+"/uploads?"+q.Encode(), nil, &session); err != nil {
		return profiles.Outcome{}, err
	}
	if !strings.HasPrefix(session.ID, "upload:") {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API answered an upload session without an upload id"}
	}
	handle, err := p.Client.upload(ctx, settings, session.ID, pic.Data)
	if err != nil {
		return profiles.Outcome{}, err
	}
	var done struct {
		Success bool `json:"success"`
	}
	body := map[string]any{"messaging_product": "whatsapp", "profile_picture_handle": handle}
	if err := p.Client.call(ctx, settings, http.MethodPost, "/"+url.PathEscape(settings[SettingPhoneNumberID])+"/whatsapp_business_profile", body, &done); err != nil {
		return profiles.Outcome{}, err
	}
	if !done.Success {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API did not confirm the business profile update"}
	}
	return profiles.Outcome{Applied: true}, nil
}

// extension is the file name extension of a picture's content type.
func extension(contentType string) string {
	if contentType == "image/png" {
		return ".png"
	}
	return ".jpg"
}

// upload sends a file's bytes, whole, to the upload session (its id as
// the Graph API gave it, which may carry a query) and returns the file's
// handle.
func (c *Client) upload(ctx context.Context, settings map[string]string, sessionID string, data []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL(settings)+"/"+sessionID, bytes.NewReader(data))
	if err != nil {
		return "", &messaging.ProviderError{Code: "provider_misconfigured", Message: "api_base_url is not a URL", Permanent: true}
	}
	req.Header.Set("Authorization", "OAuth "+settings[SettingAccessToken])
	req.Header.Set("file_offset", "0")
	res, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API cannot be reached: " + err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", &messaging.ProviderError{Code: "provider_unavailable", Message: "reading the Graph API answer: " + err.Error()}
	}
	if res.StatusCode >= 300 {
		return "", graphFailure(res, raw)
	}
	var out struct {
		H string `json:"h"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.H == "" {
		return "", &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API answered the upload without a file handle"}
	}
	return out.H, nil
}
