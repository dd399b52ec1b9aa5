package account_test

import (
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

func TestValidE164(t *testing.T) {
	t.Parallel()
	for number, want := range map[string]bool{
		"+14155550100":      true,
		"+447911123456":     true,
		"+1234567":          true,
		"+123456789012345":  true,
		"+1234567890123456": false, // 16 digits
		"+123456":           false, // too short
		"14155550100":       false,
		"+04155550100":      false,
		"+1 415 555 0100":   false,
		"+1415555010a":      false,
		"":                  false,
		"+14155550100\n":    false,
	} {
		if got := account.ValidE164(number); got != want {
			t.Errorf("ValidE164(%q) = %v, want %v", number, got, want)
		}
	}
}

func TestParseProvider(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider string
		service  account.Service
		ok       bool
	}{
		{"sandbox", account.WhatsApp, true},
		{"sandbox", account.Telegram, true},
		{"telegram", account.Telegram, true},
		{"whatsapp-cloud", account.WhatsApp, true},
		{"telegram", account.WhatsApp, false},
		{"whatsapp-cloud", account.Telegram, false},
		{"twilio", account.WhatsApp, false},
		{"", account.WhatsApp, false},
	}
	for _, c := range cases {
		_, err := account.ParseProvider(c.provider, c.service)
		if (err == nil) != c.ok {
			t.Errorf("ParseProvider(%q, %q) error = %v, want ok=%v", c.provider, c.service, err, c.ok)
		}
		if err != nil && !failure.Is(err, failure.KindInvalid) {
			t.Errorf("ParseProvider error must be a validation failure, got %v", err)
		}
	}
}

func TestNormalizeDomainAndName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Example.COM":       "example.com",
		"mail.example.com.": "mail.example.com",
		"a-b.example.co.uk": "a-b.example.co.uk",
	} {
		got, err := account.NormalizeDomain(in)
		if err != nil || got != want {
			t.Errorf("NormalizeDomain(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "localhost", "-a.example.com", "a..b.com", "exa mple.com", "example.c0m", strings.Repeat("a", 64) + ".com"} {
		if _, err := account.NormalizeDomain(bad); err == nil {
			t.Errorf("NormalizeDomain(%q) must fail", bad)
		}
	}
	if account.CheckName("Acme") != nil || account.CheckName(" ") == nil || account.CheckName(strings.Repeat("x", 201)) == nil {
		t.Error("CheckName accepts 1-200 non-blank characters")
	}
}
