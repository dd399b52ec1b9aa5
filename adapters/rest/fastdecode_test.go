package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// strictDecode is decodeJSON's encoding/json path.
func strictDecode(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("extra data after the object")

// fastBodies have the shapes the fast path takes; slowBodies are left to
// encoding/json, which decodes or refuses them with its own words.
var (
	fastBodies = []string{
		`{"sender_address":"a@b.example","recipient_address":"c@d.example","subject":"Hi","body":"<p>Hello</p>","headers":{"cc":"e@f.example"}}`,
		`{"sender_address":"a@b.example","headers":{"cc":["e@f.example","g@h.example"],"bcc":[],"reply-to":"r@s.example"}}`,
		` { "subject" : "naïve café" , "headers" : { } } `,
		`{"from":"+15550000001","to":"+15560000001","service":"whatsapp","content":"hello"}`,
		`{"message_type":"media","media_url":"https://x.example/a.png","media_type":"image","caption":""}`,
		`{}`,
		`{"attachment_uri":"https://x.example/doc.pdf"}`,
		`{"subject":"a\"b","body":"line\nbreak\r\n\ttab \\ \/ \b\f","headers":{"x-a\tb":["c\nd"]}}`,
		// Go's json.Marshal escapes <, > and &; Python's json.dumps every
		// non-ASCII character, astral ones as a surrogate pair.
		`{"subject":"na\u00efve caf\u00E9 \ud83d\ude00","body":"\u003cp\u003eA \u0026 B\u003c/p\u003e\u0000","headers":{"cc":["\u00e9@x.example"]}}`,
	}
	slowBodies = []string{
		`{"sub\u006aect":"escaped name"}`,
		`{"subject":"\x"}`,
		"{\"subject\":\"tab\tinside\"}",
		`{"subject":"\ud83d"}`,
		`{"subject":"\ud83d\u0041"}`,
		`{"subject":"\ude00\ud83d"}`,
		`{"subject":"\ud83d\n"}`,
		`{"subject":"\u00g9"}`,
		`{"subject":"\u00e"}`,
		`{"Subject":"case"}`,
		`{"subject":"one","subject":"two"}`,
		`{"subject":null}`,
		`{"subject":5}`,
		`{"subject":"x"} {}`,
		`{"subject":"x",}`,
		`{"unknown":"x"}`,
		`{"headers":{"cc":"a","cc":"b"}}`,
		`{"headers":{"cc":[1]}}`,
		`{"headers":{"x":{"y":"z"}}}`,
		`{"headers":null}`,
		"{\"subject\":\"\xff\"}",
		`[]`,
		`"x"`,
		`{"subject":"unterminated`,
	}
)

// FuzzDecodeFast checks that whatever the fast path accepts, it decodes as
// encoding/json's strict path does, for both send bodies.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range append(fastBodies, slowBodies...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFastMatchesStrict[sendEmailBody](t, raw)
		checkFastMatchesStrict[sendBody](t, raw)
	})
}

func checkFastMatchesStrict[T any](t *testing.T, raw []byte) {
	t.Helper()
	var fast, strict T
	if !decodeFast(raw, &fast) {
		var zero T
		require.True(t, reflect.DeepEqual(fast, zero), "a refused body changed the DTO: %q", raw)
		return
	}
	require.NoError(t, strictDecode(raw, &strict), "the fast path took a body encoding/json refuses: %q", raw)
	require.Equal(t, strict, fast, "body %q", raw)
}

// TestDecodeFastTakesTheCommonBodies keeps the fast path in use for the
// bodies sends carry, and out of the way of the others.
func TestDecodeFastTakesTheCommonBodies(t *testing.T) {
	t.Parallel()
	for _, raw := range fastBodies {
		var e sendEmailBody
		var m sendBody
		require.True(t, decodeFast([]byte(raw), &e) || decodeFast([]byte(raw), &m), "%s", raw)
	}
	var e sendEmailBody
	require.True(t, decodeFast([]byte(fastBodies[1]), &e))
	require.Equal(t, map[string]any{"cc": []any{"e@f.example", "g@h.example"}, "bcc": []any{}, "reply-to": "r@s.example"}, e.Headers)
	e = sendEmailBody{}
	require.True(t, decodeFast([]byte(fastBodies[len(fastBodies)-1]), &e))
	require.Equal(t, "naïve café 😀", *e.Subject)
	require.Equal(t, "<p>A & B</p>\x00", *e.Body)
	for _, raw := range slowBodies {
		var e sendEmailBody
		require.False(t, decodeFast([]byte(raw), &e), "%s", raw)
	}
}
