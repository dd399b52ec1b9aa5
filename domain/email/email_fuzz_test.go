package email_test

import (
	"encoding/json"
	"net/mail"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// FuzzAddress holds the address checks to what the SMTP sender needs. An
// address ParseAddress accepts prints as local@domain, parses again to
// itself, carries nothing that could break a header line, and is one
// mailbox to net/mail (which the sender's mail library parses with), the
// same one. A domain NormalizeDomain accepts is its own normal form.
// Refusals are Invalid.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"someone@example.com", "Some.One+tag@Mail.Example.COM", " a@b.co ", "a@b", "a..b@example.com", ".a@example.com",
		"a@example.com.", "\"quoted\"@example.com", "a b@example.com", "a@-example.com", "a@exa_mple.com", "Name <a@example.com>",
		"a@example.com\r\nBcc: x@y.z", "!#$%&'*+-/=?^_`{|}~@example.com", "a@xn--bcher-kva.example", "a@1.2.3.4", "a@[127.0.0.1]", "@example.com", "a@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := account.NormalizeDomain(s); err != nil {
			requireInvalid(t, err)
		} else if again, err := account.NormalizeDomain(d); err != nil || again != d {
			t.Fatalf("NormalizeDomain(%q) = %q, which normalises to %q, %v", s, d, again, err)
		}

		a, err := email.ParseAddress(s)
		if err != nil {
			requireInvalid(t, err)
			return
		}
		printed := a.String()
		if printed != a.Local+"@"+a.Domain || len(printed) > email.MaxAddressLength {
			t.Fatalf("%q parsed to %+v, printed %q", s, a, printed)
		}
		if again, err := email.ParseAddress(printed); err != nil || again != a {
			t.Fatalf("%q parsed to %+v, whose text parses to %+v, %v", s, a, again, err)
		}
		var p failure.Problems
		if !email.CheckLine(&p, printed, "to") || strings.ContainsAny(printed, " \t<>,;:\"()[]\\") {
			t.Fatalf("%q parsed to %q, which could break a header line", s, printed)
		}
		m, err := mail.ParseAddress(printed)
		if err != nil {
			t.Fatalf("%q parsed to %q, which net/mail refuses: %v", s, printed, err)
		}
		if m.Name != "" || !strings.EqualFold(m.Address, printed) {
			t.Fatalf("%q parsed to %q, which net/mail reads as %+v", s, printed, m)
		}
	})
}

// FuzzHeaders holds a send's headers object to its contract. Whatever the
// JSON object, ParseHeaders either refuses it with Invalid field errors
// under headers, or yields recipients that are addresses and extra headers
// that are allowed, single-line, at most 998 bytes, and read back from a
// message as exactly the headers written (no injected line).
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{
		`{"cc":"a@example.com, b@example.com","Bcc":["c@example.com"],"reply-to":"r@example.com"}`,
		`{"X-Campaign":"fall","In-Reply-To":"<m1@example.com>","References":"<a@b.c> <d@e.f>"}`,
		`{"Subject":"hi"}`, `{"X-Evil":"a\r\nBcc: victim@example.com"}`, `{"x-a":"1","X-A":"2"}`, `{"X-A":7}`,
		`{"cc":[]}`, `{"cc":[1]}`, `{"bad name":"v"}`, `{"X-Tab":"a\tb"}`, `{"X-Long":"` + strings.Repeat("v", 999) + `"}`,
		`{"List-Unsubscribe":"<mailto:u@example.com>","X-Unicode":"héllo"}`, `{"cc":"a@example.com,"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var raw map[string]any
		if json.Unmarshal(body, &raw) != nil {
			return
		}
		h, err := email.ParseHeaders(raw, "headers")
		if err != nil {
			fe := failure.As(err)
			if fe == nil || fe.Kind != failure.KindInvalid || len(fe.Fields) == 0 {
				t.Fatalf("want Invalid field errors, got %#v", err)
			}
			for _, fld := range fe.Fields {
				if len(fld.Path) < 2 || fld.Path[0] != "headers" {
					t.Fatalf("a problem outside headers: %+v", fld)
				}
			}
			return
		}
		for _, list := range [][]string{h.Cc, h.Bcc, h.ReplyTo} {
			for _, a := range list {
				if _, err := email.ParseAddress(a); err != nil {
					t.Fatalf("%s: the recipient %q is not an address", body, a)
				}
			}
		}
		var block strings.Builder
		for _, x := range h.Extra {
			lower := strings.ToLower(x.Name)
			if !strings.HasPrefix(lower, "x-") && !allowedHeader[lower] {
				t.Fatalf("%s: the header %q may not be set", body, x.Name)
			}
			var p failure.Problems
			if !email.CheckLine(&p, x.Value, "v") || !email.CheckLine(&p, x.Name, "n") || len(x.Value) > email.MaxHeaderValue || strings.Contains(x.Name, ":") {
				t.Fatalf("%s: the header %q: %q is not one safe line", body, x.Name, x.Value)
			}
			block.WriteString(x.Name + ": " + x.Value + "\r\n")
		}
		msg, err := mail.ReadMessage(strings.NewReader(block.String() + "\r\n"))
		if err != nil {
			return // a name net/textproto does not read (RFC 5322 allows more)
		}
		if len(msg.Header) != len(h.Extra) {
			t.Fatalf("%s: %d headers written, %d read back: %v", body, len(h.Extra), len(msg.Header), msg.Header)
		}
	})
}

// allowedHeader are the headers besides X-* that a client may set.
var allowedHeader = map[string]bool{
	"in-reply-to": true, "references": true, "list-unsubscribe": true, "list-unsubscribe-post": true, "list-id": true,
	"auto-submitted": true, "precedence": true, "importance": true, "priority": true, "keywords": true, "comments": true,
	"organization": true, "thread-topic": true, "thread-index": true,
}

func requireInvalid(t *testing.T, err error) {
	t.Helper()
	if fe := failure.As(err); fe == nil || fe.Kind != failure.KindInvalid {
		t.Fatalf("want Invalid, got %#v", err)
	}
}
