// Package webhook is the model of customer webhooks: an account's endpoint
// settings (URL, enabled flag, event types, signing secrets with rotation),
// the payload of message events, how a delivery is signed, when it is
// retried, and when an endpoint that keeps failing is disabled.
package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// SecretPrefix starts every signing secret, as Standard Webhooks suggests.
const SecretPrefix = "whsec_"

// RotationOverlap is how long the previous secret keeps signing after a
// rotation, so receivers can switch without losing a delivery.
const RotationOverlap = 24 * time.Hour

// DisableAfter is how long an endpoint may fail every attempt before it is
// disabled.
const DisableAfter = 5 * 24 * time.Hour

// Timeout bounds one delivery attempt.
const Timeout = 15 * time.Second

// MaxResponseBytes is how much of a receiver's answer the log keeps.
const MaxResponseBytes = 4 << 10

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// Disabled reasons.
const (
	ReasonGone     = "gone"     // the receiver answered 410
	ReasonFailing  = "failing"  // every attempt failed for DisableAfter
	ReasonOperator = "disabled" // the customer turned it off
)

// Endpoint is an account's webhook setting. Secrets are the plain values
// (signing needs them); storage keeps them sealed.
type Endpoint struct {
	AccountID string
	URL       string
	Enabled   bool
	// Events are the subscribed types; empty means every type.
	Events []event.Type
	Secret string
	// PreviousSecret still signs until PreviousUntil (after a rotation).
	PreviousSecret string
	PreviousUntil  time.Time
	// DisabledReason says why the service disabled the endpoint (empty
	// when it is enabled or the customer disabled it).
	DisabledReason string
	DisabledAt     *time.Time
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time
	// InlineMediaMaxBytes, when above 0, inlines the media of a
	// message.received of at most that many bytes as base64 data in its
	// deliveries (at most MaxInlineMediaBytes).
	InlineMediaMaxBytes int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Subscribed reports whether the endpoint wants events of type t. The test
// event always goes out; the disabled record never does.
func (e Endpoint) Subscribed(t event.Type) bool {
	switch t {
	case event.WebhookTest:
		return true
	case event.EndpointDisabled:
		return false
	}
	return len(e.Events) == 0 || slices.Contains(e.Events, t)
}

// Subscribable lists the event types an endpoint may subscribe to, in
// event.Types' order: every type but the test event (which always goes
// out) and the disabled record (which never does).
func Subscribable() []event.Type {
	out := make([]event.Type, 0, len(event.Types))
	for _, t := range event.Types {
		if t != event.WebhookTest && t != event.EndpointDisabled {
			out = append(out, t)
		}
	}
	return out
}

// SigningSecrets are the secrets that sign at now: the current one first,
// and the previous one during the rotation overlap.
func (e Endpoint) SigningSecrets(now time.Time) []string {
	out := []string{e.Secret}
	if e.PreviousSecret != "" && now.Before(e.PreviousUntil) {
		out = append(out, e.PreviousSecret)
	}
	return out
}

// Rotate replaces the secret with next; the old one signs for
// RotationOverlap more.
func (e *Endpoint) Rotate(next string, now time.Time) {
	e.PreviousSecret, e.PreviousUntil = e.Secret, now.Add(RotationOverlap)
	e.Secret = next
	e.UpdatedAt = now
}

// Disable turns the endpoint off for reason.
func (e *Endpoint) Disable(reason string, now time.Time) {
	e.Enabled = false
	e.DisabledReason = reason
	e.DisabledAt = &now
	e.UpdatedAt = now
}

// RecordFailure notes a failed attempt and reports whether the endpoint
// has now failed every attempt for DisableAfter (window, scaled in tests).
func (e *Endpoint) RecordFailure(now time.Time, window time.Duration) bool {
	if e.FailingSince == nil {
		e.FailingSince = &now
	}
	return now.Sub(*e.FailingSince) >= window
}

// NewSecret makes a fresh signing secret: whsec_ and 32 random bytes in
// standard base64, the form Standard Webhooks libraries accept.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// Bounds of a signing secret a customer chooses.
const (
	MinSecretLength = 24
	MaxSecretLength = 256
)

// CheckSecret refuses a signing secret a customer chose when it has fewer
// than MinSecretLength or more than MaxSecretLength characters, holds a
// space or a control character (it travels in environment variables and
// headers of the receivers' own code), or starts with whsec_ without
// standard base64 after it (such a secret keys webhook-signature with its
// decoded bytes). The failure names field.
func CheckSecret(secret string, field ...any) error {
	n := utf8.RuneCountInString(secret)
	msg := ""
	switch {
	case n < MinSecretLength:
		msg = fmt.Sprintf("secret must be at least %d characters", MinSecretLength)
	case n > MaxSecretLength:
		msg = fmt.Sprintf("secret must be at most %d characters", MaxSecretLength)
	case !utf8.ValidString(secret) || strings.IndexFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		msg = "secret must not contain spaces or control characters"
	default:
		if _, err := SecretKey(secret); err != nil {
			msg = err.Error()
		}
	}
	if msg == "" {
		return nil
	}
	return failure.Invalid(failure.Field("value_error", msg, field...))
}

// Settings are what a customer sets.
type Settings struct {
	URL     string
	Enabled bool
	// Events nil means every type.
	Events []string
}

// Check validates settings: an absolute https URL (http only when
// plainAllowed says the host may be reached without TLS), no fragment, no
// credentials, and known event types.
func (s Settings) Check(plainAllowed func(host string) bool) ([]event.Type, error) {
	var p failure.Problems
	u, err := url.Parse(s.URL)
	switch {
	case strings.TrimSpace(s.URL) == "":
		p.Add("missing", "url must not be empty", "url")
	case len(s.URL) > MaxURLLength:
		p.Add("string_too_long", fmt.Sprintf("url must be at most %d characters", MaxURLLength), "url")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		p.Add("url_parsing", "url must be a complete https:// URL including its route", "url")
	case u.User != nil:
		p.Add("url_parsing", "url must not contain credentials", "url")
	case u.Fragment != "":
		p.Add("url_parsing", "url must not contain a fragment", "url")
	case u.Scheme == "http" && (plainAllowed == nil || !plainAllowed(u.Hostname())):
		p.Add("url_scheme", "url must use https:// (plain http only for hosts in the allowed private ranges)", "url")
	}
	var types []event.Type
	seen := map[event.Type]bool{}
	for i, name := range s.Events {
		t := event.Type(name)
		if !slices.Contains(Subscribable(), t) {
			p.Add("enum", "unknown event type "+name, "events", i)
			continue
		}
		if !seen[t] {
			types = append(types, t)
			seen[t] = true
		}
	}
	return types, p.Err()
}

// MaxInlineMediaBytes bounds an endpoint's InlineMediaMaxBytes: 5 MB.
const MaxInlineMediaBytes = 5 << 20

// CheckInlineMediaMaxBytes refuses an inline media cap below 0 or above
// MaxInlineMediaBytes, naming field.
func CheckInlineMediaMaxBytes(n int64, field ...any) error {
	if n < 0 || n > MaxInlineMediaBytes {
		return failure.Invalid(failure.Field("value_error",
			fmt.Sprintf("inline_media_max_bytes must be 0 (off) to %d", MaxInlineMediaBytes), field...))
	}
	return nil
}

// Status is where a delivery is.
type Status string

// The delivery statuses.
const (
	Pending   Status = "pending"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
)

// ParseStatus reads a status filter.
func ParseStatus(s string) (Status, bool) {
	switch st := Status(s); st {
	case Pending, Succeeded, Failed:
		return st, true
	}
	return "", false
}

// Delivery is one event on its way to an account's endpoint. Its ID is
// the webhook-id every attempt carries.
type Delivery struct {
	ID        string
	AccountID string
	EventID   string
	EventType event.Type
	ThreadID  string
	// Seq orders deliveries (the order their events were recorded).
	Seq            int64
	Status         Status
	Attempts       int
	LastStatusCode int
	LastError      string
	NextAttemptAt  time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Payload is the event's JSON (read with the delivery).
	Payload []byte
	// Log is the attempts, oldest first (read for listings).
	Log []Attempt
}

// Attempt is one POST of a delivery, as the log keeps it.
type Attempt struct {
	At         time.Time
	StatusCode int
	Latency    time.Duration
	Error      string
	// Response is the first MaxResponseBytes of the body.
	Response string
	// Interrupted says the process making the attempt died before its
	// answer was recorded: the receiver may or may not have got it. Such
	// an attempt is no failure of the endpoint: it is not counted in the
	// delivery's Attempts, moves no retry schedule and no endpoint health,
	// and the delivery is attempted again at once.
	Interrupted bool
}

// InterruptedError is the Error of an interrupted attempt.
const InterruptedError = "interrupted: the process making this attempt stopped before its answer was recorded; the receiver may have got it (it is attempted again with the same webhook-id)"
