package email_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

func TestNormalizeLocalPart(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"Agent":                          "agent",
		"a.b-c_d":                        "a.b-c_d",
		"12345":                          "12345",
		strings.Repeat("x", 30):          strings.Repeat("x", 30),
		"  Sales.Team  ":                 "sales.team",
		"support-bot_01.eu":              "support-bot_01.eu",
		strings.ToUpper("mixed.case.ok"): "mixed.case.ok",
	}
	for in, want := range good {
		got, err := email.NormalizeLocalPart(in, "address")
		if err != nil || got != want {
			t.Errorf("NormalizeLocalPart(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"abcd":                  "string_too_short",
		strings.Repeat("x", 31): "string_too_long",
		"has space":             "string_pattern_mismatch",
		"plus+tag":              "string_pattern_mismatch",
		"ünïcode":               "string_pattern_mismatch",
		".leading":              "value_error",
		"trailing.":             "value_error",
		"dou..ble":              "value_error",
		"at@sign":               "string_pattern_mismatch",
	}
	for in, typ := range bad {
		_, err := email.NormalizeLocalPart(in, "address")
		fe := failure.As(err)
		if err == nil || fe.Kind != failure.KindInvalid {
			t.Errorf("NormalizeLocalPart(%q) accepted", in)
			continue
		}
		found := false
		for _, f := range fe.Fields {
			found = found || (f.Type == typ && f.Path[0] == "address")
		}
		if !found {
			t.Errorf("NormalizeLocalPart(%q): want a %s problem, got %+v", in, typ, fe.Fields)
		}
	}
}

func TestParseAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"someone@example.com":           "someone@example.com",
		"Some.One+tag@Mail.Example.org": "Some.One+tag@mail.example.org",
		" x@y.io ":                      "x@y.io",
	} {
		a, err := email.ParseAddress(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseAddress(%q) = %q, %v; want %q", in, a, err, want)
		}
	}
	for _, in := range []string{
		"", "plain", "@example.com", "a@", "a@@example.com", "a@localhost", "a..b@example.com",
		".a@example.com", "a.@example.com", "Name <a@example.com>", "a@example.com\r\nBcc: x@evil.com",
		"a b@example.com", `"quoted"@example.com`, "a@exa_mple.com", strings.Repeat("a", 65) + "@example.com",
	} {
		if _, err := email.ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%q) accepted", in)
		}
	}
}

func TestParseHeaders(t *testing.T) {
	t.Parallel()
	h, err := email.ParseHeaders(map[string]any{
		"cc":          "a@example.com, b@example.com",
		"BCC":         []any{"c@example.com"},
		"Reply-To":    "reply@example.com",
		"x-campaign":  "spring",
		"In-Reply-To": "<abc@example.com>",
	}, "headers")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.Cc, ",") != "a@example.com,b@example.com" || strings.Join(h.Bcc, ",") != "c@example.com" || strings.Join(h.ReplyTo, ",") != "reply@example.com" {
		t.Errorf("addresses: %+v", h)
	}
	if len(h.Extra) != 2 || h.Extra[0] != (email.Header{Name: "In-Reply-To", Value: "<abc@example.com>"}) || h.Extra[1] != (email.Header{Name: "X-Campaign", Value: "spring"}) {
		t.Errorf("extra headers: %+v", h.Extra)
	}

	cases := []struct {
		raw  map[string]any
		typ  string
		path []any
	}{
		{map[string]any{"cc": "a@example.com\r\nBcc: victim@example.com"}, "header_injection", []any{"headers", "cc"}},
		{map[string]any{"X-Note": "hi\nthere"}, "header_injection", []any{"headers", "X-Note"}},
		{map[string]any{"bcc": []any{"ok@example.com", "x@example.com\n"}}, "header_injection", []any{"headers", "bcc", 1}},
		{map[string]any{"X-Bell": "ring\x07"}, "value_error", []any{"headers", "X-Bell"}},
		{map[string]any{"From": "boss@example.com"}, "value_error", []any{"headers", "From"}},
		{map[string]any{"Content-Type": "text/plain"}, "value_error", []any{"headers", "Content-Type"}},
		{map[string]any{"Subject": "x"}, "value_error", []any{"headers", "Subject"}},
		{map[string]any{"Bad Name": "x"}, "value_error", []any{"headers", "Bad Name"}},
		{map[string]any{"cc": "not-an-address"}, "value_error", []any{"headers", "cc"}},
		{map[string]any{"cc": 5.0}, "value_error", []any{"headers", "cc"}},
		{map[string]any{"bcc": []any{1.0}}, "string_type", []any{"headers", "bcc", 0}},
		{map[string]any{"X-Num": 1.0}, "string_type", []any{"headers", "X-Num"}},
		{map[string]any{"X-Long": strings.Repeat("v", 999)}, "string_too_long", []any{"headers", "X-Long"}},
		{map[string]any{"cc": "a@example.com", "CC": "b@example.com"}, "value_error", []any{"headers", "cc"}},
	}
	for _, c := range cases {
		_, err := email.ParseHeaders(c.raw, "headers")
		fe := failure.As(err)
		if err == nil || fe.Kind != failure.KindInvalid {
			t.Errorf("%v accepted", c.raw)
			continue
		}
		found := false
		for _, f := range fe.Fields {
			found = found || (f.Type == c.typ && samePath(f.Path, c.path))
		}
		if !found {
			t.Errorf("%v: want %s at %v, got %+v", c.raw, c.typ, c.path, fe.Fields)
		}
	}
}

func samePath(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestHTMLBodies(t *testing.T) {
	t.Parallel()
	if email.LooksLikeHTML("Hello, 2 < 3 and 5 > 4") || email.LooksLikeHTML("plain text") {
		t.Error("plain text taken for HTML")
	}
	body := `<html><head><title>T</title><style>p{}</style></head><body><h1>Hello &amp; welcome</h1>
<p>First line<br>second line</p><ul><li>one</li><li>two</li></ul><p><a href="https://example.com/x">the link</a></p></body></html>`
	if !email.LooksLikeHTML(body) {
		t.Fatal("HTML not recognised")
	}
	want := "Hello & welcome\nFirst line\nsecond line\n\n- one\n- two\nthe link (https://example.com/x)"
	if got := email.TextFromHTML(body); got != want {
		t.Errorf("TextFromHTML:\n%q\nwant\n%q", got, want)
	}
}

func TestRecipients(t *testing.T) {
	t.Parallel()
	e := email.Email{To: "a@x.io", Cc: []string{"b@x.io"}, Bcc: []string{"c@x.io"}}
	if strings.Join(e.Recipients(), ",") != "a@x.io,b@x.io,c@x.io" {
		t.Errorf("recipients: %v", e.Recipients())
	}
}

func TestParseMailbox(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]email.Mailbox{
		"ann@example.org":                            {Address: "ann@example.org"},
		"Ann Example <ann@example.org>":              {Name: "Ann Example", Address: "ann@example.org"},
		`"Acme Support" <support@Mail.Acme.example>`: {Name: "Acme Support", Address: "support@mail.acme.example"},
		"=?UTF-8?Q?Zo=C3=AB?= <zoe@example.com>":     {Name: "Zoë", Address: "zoe@example.com"},
		"  <bob@example.org>  ":                      {Address: "bob@example.org"},
	} {
		got, err := email.ParseMailbox(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "ann", "Ann <ann@localhost>", "a@example.org, b@example.org", "\"Ann <ann@example.org>",
		"Ann\r\n <ann@example.org>", "\"a b\"@example.org", strings.Repeat("n", 201) + " <ann@example.org>"} {
		_, err := email.ParseMailbox(in)
		require.Error(t, err, "%q", in)
	}
	list, err := email.ParseMailboxList(`"Doe, John" <john@example.net>, ann@example.org`)
	require.NoError(t, err)
	require.Equal(t, []email.Mailbox{{Name: "Doe, John", Address: "john@example.net"}, {Address: "ann@example.org"}}, list)
	require.Equal(t, `"Doe, John" <john@example.net>, ann@example.org`, email.FormatList(list))
	again, err := email.ParseMailboxList(email.FormatList([]email.Mailbox{{Name: "Zoë \"Z\" Ünver", Address: "zoe@example.com"}}))
	require.NoError(t, err)
	require.Equal(t, "Zoë \"Z\" Ünver", again[0].Name, "a formatted list reads back")
}

// A sent email's Message-ID names its id, and a thread's id its first
// email's id; anything else names no email.
func TestIDsNamedByMessageIDsAndThreads(t *testing.T) {
	id := ident.New(ident.Email)
	got, ok := email.SentEmailID(email.SentMessageID(id, "mail.example.com"))
	require.True(t, ok)
	require.Equal(t, id, got)
	require.Equal(t, id, email.ThreadStarterID(email.StartedThreadID(id)))
	require.True(t, ident.Valid(ident.EmailThread, email.StartedThreadID(id)))
	for _, other := range []string{
		"", "<>", "<@mail.example.com>", id + "@mail.example.com", "<" + id + ">", "<" + id + "@mail.example.com",
		"<eml_@mail.example.com>", "<eml_ABC@mail.example.com>", "<msg_abc@mail.example.com>", "<CAB12@mail.gmail.com>",
	} {
		_, ok := email.SentEmailID(other)
		require.False(t, ok, "%q names no email", other)
	}
}
