// Package account holds the tenancy model: accounts, their API credentials,
// the agent numbers they may send from, and their email domains and addresses.
package account

import (
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Account is a tenant. Every other resource belongs to exactly one account.
type Account struct {
	ID   string
	Name string
	// Version changes whenever the account or anything it owns changes;
	// a copy with the current version is current.
	Version int64
	// HistoryRetentionDays is the account's own history retention in
	// days; 0 follows the server's (see HistoryRetention).
	HistoryRetentionDays int
	// MessageRetentionDays is the account's message retention in days: its
	// messages and emails older than that are deleted; 0 keeps them (see
	// MessageRetention).
	MessageRetentionDays int
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// MaxNameLength bounds account names so that they fit any display.
const MaxNameLength = 200

// CheckName validates an account's display name.
func CheckName(name string) error {
	var p failure.Problems
	switch n := strings.TrimSpace(name); {
	case n == "":
		p.Add("string_too_short", "name must not be empty", "name")
	case len(name) > MaxNameLength:
		p.Add("string_too_long", "name must be at most 200 characters", "name")
	}
	return p.Err()
}

// Credential is one API key + secret pair of an account. Only keyed hashes of
// the key and the secret are kept; KeyPrefix (the first characters of the key)
// lets an operator recognise a key in listings.
type Credential struct {
	ID         string
	AccountID  string
	Label      string
	KeyPrefix  string
	KeyHash    []byte
	SecretHash []byte
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// Revoked reports whether the credential may no longer be used.
func (c Credential) Revoked() bool { return c.RevokedAt != nil }

// Service is a messaging channel.
type Service string

// The channels the service speaks.
const (
	WhatsApp Service = "whatsapp"
	Telegram Service = "telegram"
)

// WebUI names the threads of a customer's own web chat, recorded through
// the API (messaging.Service.SaveWebUI) so that its conversations sit
// beside the channels' in history. It is no channel: nothing is sent on
// it, and ParseService does not accept it.
const WebUI Service = "web-ui"

// ParseService accepts a channel name as clients send it.
func ParseService(s string) (Service, bool) {
	switch Service(s) {
	case WhatsApp, Telegram:
		return Service(s), true
	}
	return "", false
}

// Provider is the implementation behind an agent number.
type Provider string

// The known providers. The sandbox serves every service and talks to nobody.
const (
	ProviderSandbox       Provider = "sandbox"
	ProviderTelegram      Provider = "telegram"
	ProviderWhatsAppCloud Provider = "whatsapp-cloud"
)

// ParseProvider checks that provider exists and can serve service.
func ParseProvider(provider string, service Service) (Provider, error) {
	p := Provider(provider)
	switch {
	case p == ProviderSandbox:
	case p == ProviderTelegram && service == Telegram:
	case p == ProviderWhatsAppCloud && service == WhatsApp:
	case p == ProviderTelegram || p == ProviderWhatsAppCloud:
		return "", failure.Invalid(failure.Field("value_error",
			"provider "+provider+" cannot serve service "+string(service), "provider"))
	default:
		return "", failure.Invalid(failure.Field("enum",
			"provider must be one of sandbox, telegram, whatsapp-cloud", "provider"))
	}
	return p, nil
}

// ValidE164 reports whether number is a phone number in the ITU-T E.164
// form: a plus, a non-zero digit, 7 to 15 digits in all. (Checked by hand:
// it runs on every send, where a regular expression cost more than the
// rest of the validation.)
func ValidE164(number string) bool {
	if len(number) < 8 || len(number) > 16 || number[0] != '+' || number[1] == '0' {
		return false
	}
	for i := 1; i < len(number); i++ {
		if number[i] < '0' || number[i] > '9' {
			return false
		}
	}
	return true
}

// Number is an agent phone number (or bot identity) an account sends from.
type Number struct {
	ID        string
	AccountID string
	Number    string
	Service   Service
	Provider  Provider
	// SealedSettings is the provider configuration (tokens, ids), encrypted
	// with the server key; only the provider adapter ever opens it.
	SealedSettings []byte
	Enabled        bool
	CreatedAt      time.Time
	// Profile is how the number presents itself to users, as the account
	// last set it.
	Profile Profile
}

// Domain is an email domain an account may create addresses on, besides the
// service's own domain.
type Domain struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
}

// isDNSName reports whether n is a lower-case DNS name of at least two
// labels: labels of 1 to 63 letters, digits and inner hyphens, the last
// of 2 to 63 letters.
func isDNSName(n string) bool {
	labels := strings.Split(n, ".")
	if len(labels) < 2 {
		return false
	}
	for i, l := range labels {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		last := i == len(labels)-1
		if last && len(l) < 2 {
			return false
		}
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case c >= 'a' && c <= 'z':
			case (c >= '0' && c <= '9' || c == '-') && !last:
			default:
				return false
			}
		}
	}
	return true
}

// NormalizeDomain lower-cases name and checks that it is a DNS name.
func NormalizeDomain(name string) (string, error) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
	if len(n) > 253 || !isDNSName(n) {
		return "", failure.Invalid(failure.Field("value_error", "domain must be a DNS name such as mail.example.com", "domain"))
	}
	return n, nil
}

// EmailAddress is an address an account sends email from.
type EmailAddress struct {
	ID        string
	AccountID string
	LocalPart string
	Domain    string
	CreatedAt time.Time
}

// Address is the full address, local@domain.
func (e EmailAddress) Address() string { return e.LocalPart + "@" + e.Domain }
