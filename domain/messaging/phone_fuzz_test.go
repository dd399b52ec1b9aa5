package messaging_test

import (
	"regexp"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// e164 is ITU-T E.164 as the interface states it, written independently
// of the hand-written check it is compared with.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// telegramSafe is every character a Telegram recipient may hold.
var telegramSafe = regexp.MustCompile(`^[-+@A-Za-z0-9_]+$`)

// FuzzPhoneNumber holds the phone number and recipient checks to their
// definitions: ValidE164 accepts exactly what the E.164 pattern matches,
// a WhatsApp recipient is exactly an E.164 number, and a Telegram
// recipient is an E.164 number, a chat id or an @username.
func FuzzPhoneNumber(f *testing.F) {
	for _, s := range []string{"+14155550100", "+447911123456", "+1234567", "+123456", "+1234567890123456", "+0123456789",
		"14155550100", "+1415555010a", "+١٤١٥٥٥٥٠١٠٠", "-1001234567890", "@some_bot", "@abc", "1234", "+ 14155550100", "+14155550100\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid := account.ValidE164(s)
		if valid != e164.MatchString(s) {
			t.Fatalf("ValidE164(%q) = %v, the E.164 pattern says %v", s, valid, !valid)
		}
		if got, want := messaging.ValidRecipient(account.WhatsApp, s), valid || messaging.ValidWhatsAppUserID(s); got != want {
			t.Fatalf("ValidRecipient(whatsapp, %q) = %v, want E.164 or a user id (%v)", s, got, want)
		}
		tg := messaging.ValidRecipient(account.Telegram, s)
		if valid && !tg {
			t.Fatalf("Telegram refuses the E.164 number %q", s)
		}
		if tg && !telegramSafe.MatchString(s) {
			t.Fatalf("Telegram accepts %q, which holds characters no recipient has", s)
		}
	})
}
