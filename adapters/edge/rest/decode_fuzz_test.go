package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
)

// decodeJSON takes a body through segmentio's decoder when it decodes
// there: it must accept exactly what encoding/json accepts, into the same
// value, for the bodies of the hottest endpoints (a send, an email).
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"content":"hi","from":"+15550001111","to":"+15550002222","service":"telegram"}`,
		`{"Content":"case","FROM":"+1","to":null}`,
		`{"content":"\u00e9\ud83d\ude00 \"q\" \\ \n","buttons":[{"id":"a","title":"A"}]}`,
		"{\"content\":\"bad \xff utf-8\"}",
		`{"content":"x"} {"content":"y"}`,
		`{"content":"x"} `,
		`{"content":"x","extra":1}`,
		`{"content":1}`,
		`{"buttons":{}}`,
		`{"template":{"name":"t","language":"en","parameters":["a"]}}`,
		`{"sender_address":"a@b.co","recipient_address":["c@d.co","e@f.co"],"subject":"s","body":"<p>b</p>","headers":{"cc":["x@y.co"],"reply-to":"r@s.co","n":1.5e3}}`,
		`{"sender_address":"a@b.co","recipient_address":"c@d.co","subject":"s","body":"b","headers":null}`,
		`{"recipient_address":7}`,
		`{"content":"dup","content":"last"}`,
		`[]`, `null`, `"s"`, `{`, `{"content":"x"`, `{"content":"x",}`, ` {} `, `{"subject":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(bytes.TrimSpace(body)) == 0 {
			return
		}
		for _, newDst := range []func() any{func() any { return new(sendBody) }, func() any { return new(sendEmailBody) }} {
			got, want := newDst(), newDst()
			err := decodeJSON(httptest.NewRequest("POST", "/", bytes.NewReader(body)), got)
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			wantErr := dec.Decode(want)
			if wantErr == nil && dec.More() {
				wantErr = errExtraData
			}
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%T from %q: decodeJSON says %v, encoding/json %v", got, body, err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%T from %q: decodeJSON gives %+v, encoding/json %+v", got, body, got, want)
			}
		}
	})
}

var errExtraData = errors.New("extra data after the object")
