// Package telegram is the channel provider for the Telegram Bot API: sends
// (text, photo, video, audio, document by URL, location), group actions on
// the chats the bot is in, and inbound updates through a webhook (verified
// by its secret token) or getUpdates long polling.
//
// A number's settings (sealed at rest) are:
//
//	bot_token       the bot's token from @BotFather (required)
//	api_base_url    the Bot API server, https://api.telegram.org by default
//	webhook_secret  the secret_token of setWebhook; derived from the token
//	                when not set
//	inbound         "webhook" or "polling"; by default webhook when the
//	                server has a public URL, polling otherwise
package telegram

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
)

// DefaultBaseURL is the public Bot API server.
const DefaultBaseURL = "https://api.telegram.org"

// Setting names.
const (
	SettingBotToken      = "bot_token"
	SettingAPIBaseURL    = "api_base_url"
	SettingWebhookSecret = "webhook_secret"
	SettingInbound       = "inbound"
)

// Client calls the Bot API.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client with sane timeouts.
func NewClient() *Client {
	return &Client{HTTP: &http.Client{Timeout: 70 * time.Second}}
}

// response is the envelope of every Bot API answer.
type response struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// ErrNoToken is a number without a bot token.
var ErrNoToken = errors.New("the number has no bot_token setting")

// Call invokes a Bot API method with JSON parameters and decodes its
// result into out (when not nil). Failures the API explains are
// *messaging.ProviderError.
func (c *Client) Call(ctx context.Context, settings map[string]string, method string, params, out any) error {
	token := settings[SettingBotToken]
	if token == "" {
		return &messaging.ProviderError{Code: "provider_misconfigured", Message: ErrNoToken.Error(), Permanent: true}
	}
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.do(ctx, settings, method, "application/json", bytes.NewReader(body), out)
}

// apiBase is the Bot API server of a number's settings.
func apiBase(settings map[string]string) string {
	base := strings.TrimRight(settings[SettingAPIBaseURL], "/")
	if base == "" {
		base = DefaultBaseURL
	}
	return base
}

func (c *Client) do(ctx context.Context, settings map[string]string, method, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, apiBase(settings)+"/bot"+settings[SettingBotToken]+"/"+method, body)
	if err != nil {
		return &messaging.ProviderError{Code: "provider_misconfigured", Message: "api_base_url is not a URL", Permanent: true}
	}
	req.Header.Set("Content-Type", contentType)
	res, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The URL holds the token: never let it reach a log.
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API cannot be reached: " + redact(err.Error(), settings[SettingBotToken])}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "reading the Bot API answer: " + redact(err.Error(), settings[SettingBotToken])}
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		if res.StatusCode >= 500 {
			return &messaging.ProviderError{Code: "provider_unavailable", Message: fmt.Sprintf("the Bot API answered %d", res.StatusCode)}
		}
		return &messaging.ProviderError{Code: "provider_unavailable", Message: fmt.Sprintf("the Bot API answered %d without a JSON body", res.StatusCode)}
	}
	if !r.OK {
		return apiError(r, res.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("telegram %s result: %w", method, err)
		}
	}
	return nil
}

// apiError maps a Bot API failure to what the delivery does next.
func apiError(r response, status int) *messaging.ProviderError {
	code := r.ErrorCode
	if code == 0 {
		code = status
	}
	desc := r.Description
	lower := strings.ToLower(desc)
	pe := &messaging.ProviderError{Message: fmt.Sprintf("telegram %d: %s", code, desc)}
	switch {
	case code == http.StatusTooManyRequests:
		pe.Code = "rate_limited"
		if r.Parameters != nil && r.Parameters.RetryAfter > 0 {
			pe.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		}
	case code == http.StatusUnauthorized || code == http.StatusNotFound:
		// 404 is what the API answers for a malformed token.
		pe.Code, pe.Permanent = "provider_auth_failed", true
	case code == http.StatusForbidden:
		// "bot was blocked by the user", "bot was kicked from the group
		// chat", "bot can't initiate conversation with a user".
		pe.Code, pe.Permanent = "recipient_unreachable", true
	case code == http.StatusBadRequest && r.Parameters != nil && r.Parameters.MigrateToChatID != 0:
		pe.Code, pe.Permanent = "chat_migrated", true
	case code == http.StatusBadRequest && strings.Contains(lower, "chat not found"):
		pe.Code, pe.Permanent = "recipient_unreachable", true
	case code == http.StatusBadRequest && (strings.Contains(lower, "url") || strings.Contains(lower, "file")):
		// "failed to get HTTP URL content", "wrong file identifier/HTTP
		// URL specified", "wrong type of the web page content".
		pe.Code, pe.Permanent = "media_unreachable", true
	case code == http.StatusBadRequest && (strings.Contains(lower, "not enough rights") || strings.Contains(lower, "administrator")):
		pe.Code, pe.Permanent = "not_enough_rights", true
	case code == http.StatusConflict:
		// getUpdates while a webhook is set, or two pollers at once.
		pe.Code = "provider_conflict"
	case code >= 500:
		pe.Code = "provider_unavailable"
	default:
		pe.Code, pe.Permanent = "provider_rejected", true
	}
	return pe
}

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "<bot-token>")
}

// WebhookSecret is the secret_token the bot's webhook is set with: the
// number's webhook_secret setting, or one derived from the bot token and
// the number id, so that it need not be stored.
func WebhookSecret(numberID string, settings map[string]string) string {
	if s := settings[SettingWebhookSecret]; s != "" {
		return s
	}
	if settings[SettingBotToken] == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(settings[SettingBotToken]))
	m.Write([]byte("switchboard telegram webhook " + numberID))
	return hex.EncodeToString(m.Sum(nil))
}

// User is a Telegram user.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Name is the user's display name.
func (u User) Name() string { return strings.TrimSpace(u.FirstName + " " + u.LastName) }

// GetMe checks the token and says which bot it is.
func (c *Client) GetMe(ctx context.Context, settings map[string]string) (User, error) {
	var u User
	err := c.Call(ctx, settings, "getMe", struct{}{}, &u)
	return u, err
}

// WebhookInfo is what getWebhookInfo reports.
type WebhookInfo struct {
	URL                  string `json:"url"`
	PendingUpdateCount   int    `json:"pending_update_count"`
	LastErrorDate        int64  `json:"last_error_date,omitempty"`
	LastErrorMessage     string `json:"last_error_message,omitempty"`
	HasCustomCertificate bool   `json:"has_custom_certificate"`
}

// GetWebhookInfo reads the bot's webhook.
func (c *Client) GetWebhookInfo(ctx context.Context, settings map[string]string) (WebhookInfo, error) {
	var w WebhookInfo
	err := c.Call(ctx, settings, "getWebhookInfo", struct{}{}, &w)
	return w, err
}

// AllowedUpdates are the update types Switchboard handles.
var AllowedUpdates = []string{"message", "edited_message", "my_chat_member", "message_reaction", "callback_query"}

// SetWebhook points the bot's updates at url, signed with secret.
func (c *Client) SetWebhook(ctx context.Context, settings map[string]string, url, secret string) error {
	return c.Call(ctx, settings, "setWebhook", map[string]any{
		"url": url, "secret_token": secret, "allowed_updates": AllowedUpdates,
	}, nil)
}

// DeleteWebhook removes the bot's webhook, so that getUpdates works.
func (c *Client) DeleteWebhook(ctx context.Context, settings map[string]string) error {
	return c.Call(ctx, settings, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil)
}

// GetUpdates long-polls for updates from offset on.
func (c *Client) GetUpdates(ctx context.Context, settings map[string]string, offset int64, timeout time.Duration) ([]Update, error) {
	var out []Update
	err := c.Call(ctx, settings, "getUpdates", map[string]any{
		"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": AllowedUpdates,
	}, &out)
	return out, err
}
