// Package whatsapp is the channel provider for the WhatsApp Cloud API
// (Meta's Graph API): sends to /{phone-number-id}/messages, to users and
// to groups, the groups of the Groups API (groups.go), and the inbound
// webhook (the GET verification handshake, and POSTs signed with the app
// secret) carrying messages, delivery statuses and group changes.
//
// A number's settings (sealed at rest) are:
//
//	phone_number_id  the Cloud API id of the business phone number (required)
//	access_token     a system user access token with whatsapp_business_messaging (required)
//	app_secret       the Meta app's secret, which signs webhooks (required for inbound)
//	verify_token     the token typed into the app's webhook settings (required for inbound)
//	api_base_url     the Graph API server, https://graph.facebook.com by default
//	graph_version    the Graph API version, v23.0 by default
package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
)

// Defaults of the Graph API.
const (
	DefaultBaseURL = "https://graph.facebook.com"
	DefaultVersion = "v23.0"
)

// Setting names.
const (
	SettingPhoneNumberID = "phone_number_id"
	SettingAccessToken   = "access_token"
	SettingAppSecret     = "app_secret"
	SettingVerifyToken   = "verify_token"
	SettingAPIBaseURL    = "api_base_url"
	SettingGraphVersion  = "graph_version"
)

// Client calls the Graph API.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client with sane timeouts.
func NewClient() *Client { return &Client{HTTP: &http.Client{Timeout: 30 * time.Second}} }

// baseURL is the versioned Graph API root of a number's settings.
func baseURL(settings map[string]string) string {
	base := strings.TrimRight(settings[SettingAPIBaseURL], "/")
	if base == "" {
		base = DefaultBaseURL
	}
	version := settings[SettingGraphVersion]
	if version == "" {
		version = DefaultVersion
	}
	return base + "/" + version
}

// GraphError is the error object of a Graph API failure.
type GraphError struct {
	Message      string `json:"message"`
	Type         string `json:"type"`
	Code         int    `json:"code"`
	ErrorSubcode int    `json:"error_subcode"`
	ErrorData    struct {
		Details string `json:"details"`
	} `json:"error_data"`
	FBTraceID string `json:"fbtrace_id"`
}

// call sends a request and decodes the answer into out.
func (c *Client) call(ctx context.Context, settings map[string]string, method, path string, body, out any) error {
	res, err := c.send(ctx, settings, method, baseURL(settings)+path, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "reading the Graph API answer: " + err.Error()}
	}
	if res.StatusCode >= 300 {
		return graphFailure(res, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API answer is not JSON"}
		}
	}
	return nil
}

// send makes an authorized request to target (a Graph API URL, or the
// download URL the Graph API gave) and returns the response unread.
func (c *Client) send(ctx context.Context, settings map[string]string, method, target string, body any) (*http.Response, error) {
	if settings[SettingAccessToken] == "" || settings[SettingPhoneNumberID] == "" {
		return nil, &messaging.ProviderError{Code: "provider_misconfigured", Message: "the number needs the phone_number_id and access_token settings", Permanent: true}
	}
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, &messaging.ProviderError{Code: "provider_misconfigured", Message: "api_base_url is not a URL", Permanent: true}
	}
	req.Header.Set("Authorization", "Bearer "+settings[SettingAccessToken])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API cannot be reached: " + err.Error()}
	}
	return res, nil
}

// graphFailure is the error of a Graph API answer with a failure status
// whose body is raw.
func graphFailure(res *http.Response, raw []byte) error {
	var e struct {
		Error *GraphError `json:"error"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Error == nil {
		e.Error = &GraphError{Message: fmt.Sprintf("HTTP %d", res.StatusCode)}
	}
	return MapError(e.Error, res.StatusCode, res.Header.Get("Retry-After"))
}

// Error codes of the Cloud API and what a delivery does about them
// (developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes).
var errorCodes = map[int]struct {
	code      string
	permanent bool
}{
	// Authorization and permissions.
	0: {"provider_auth_failed", true}, 190: {"provider_auth_failed", true}, 3: {"provider_auth_failed", true},
	10: {"provider_auth_failed", true}, 200: {"provider_auth_failed", true}, 131005: {"provider_auth_failed", true},
	// Throttling: back off and try again.
	4: {"rate_limited", false}, 80007: {"rate_limited", false}, 130429: {"rate_limited", false},
	131048: {"rate_limited", false}, 131056: {"rate_limited", false},
	// Integrity and account state.
	368: {"account_restricted", true}, 131031: {"account_restricted", true}, 131042: {"payment_required", true},
	// The recipient.
	131026: {"recipient_unreachable", true}, 131030: {"recipient_not_allowed", true}, 131021: {"recipient_unreachable", true},
	133010: {"provider_misconfigured", true}, 131047: {"re_engagement_required", true}, 131049: {"marketing_limit", true},
	130472: {"recipient_unreachable", true}, 131050: {"recipient_opted_out", true},
	// The request.
	100: {"provider_rejected", true}, 131008: {"provider_rejected", true}, 131009: {"provider_rejected", true},
	131051: {"not_supported_by_provider", true}, 131052: {"media_unreachable", true}, 131053: {"media_unreachable", true},
	132000: {"template_error", true}, 132001: {"template_error", true},
	// Transient failures of the service.
	1: {"provider_unavailable", false}, 2: {"provider_unavailable", false}, 131000: {"provider_unavailable", false},
	131016: {"provider_unavailable", false}, 133004: {"provider_unavailable", false},
}

// MapError maps a Graph API error to what the delivery does next.
func MapError(e *GraphError, status int, retryAfter string) *messaging.ProviderError {
	text := e.Message
	if e.ErrorData.Details != "" {
		text += ": " + e.ErrorData.Details
	}
	pe := &messaging.ProviderError{Message: fmt.Sprintf("whatsapp %d: %s", e.Code, text)}
	if m, ok := errorCodes[e.Code]; ok {
		pe.Code, pe.Permanent = m.code, m.permanent
	} else if status >= 500 || status == http.StatusTooManyRequests {
		pe.Code = "provider_unavailable"
	} else {
		pe.Code, pe.Permanent = "provider_rejected", true
	}
	if secs, err := strconv.Atoi(retryAfter); err == nil && secs > 0 && !pe.Permanent {
		pe.RetryAfter = time.Duration(secs) * time.Second
	}
	return pe
}

// PhoneNumber is what the phone number lookup reports.
type PhoneNumber struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
	QualityRating      string `json:"quality_rating"`
}

// LookupNumber reads the business phone number the settings name.
func (c *Client) LookupNumber(ctx context.Context, settings map[string]string) (PhoneNumber, error) {
	var p PhoneNumber
	err := c.call(ctx, settings, http.MethodGet, "/"+settings[SettingPhoneNumberID]+"?fields=display_phone_number,verified_name,quality_rating", nil, &p)
	return p, err
}

// Digits keeps the digits of a phone number as WhatsApp writes it
// ("+1 555-078-3881" → "15550783881").
func Digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
