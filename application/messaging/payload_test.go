package messaging

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/ident"
)

func TestDeliverPayloadIsWhatEncodingJSONWritesAndReads(t *testing.T) {
	t.Parallel()
	for _, id := range []string{ident.New(ident.Message), "msg_aaaaaaaaaaaaaaaaaaaaaa1234", "not a <valid> id", "msg_\"quoted\""} {
		got := encodeDeliverPayload(id)
		want, err := json.Marshal(deliverPayload{MessageID: id})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encodeDeliverPayload(%q) = %s, want %s", id, got, want)
		}
		p, err := decodeDeliverPayload(got)
		if err != nil || p.MessageID != id {
			t.Errorf("decodeDeliverPayload(%s) = %q, %v; want %q", got, p.MessageID, err, id)
		}
	}
}

func TestDecodeDeliverPayloadReadsOtherJSONThroughEncodingJSON(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{ "message_id": "msg_abc" }`:                  "msg_abc",
		`{"message_id":"msg_abc","attempt":2}`:         "msg_abc",
		`{"message_id":"msg_\u0061bc"}`:                "msg_abc",
		`{"message_id":"msg_ABC"}`:                     "msg_ABC",
		`{"other":"x","message_id":"msg_abc"}`:         "msg_abc",
		`{"message_id":"msg_abc"}` + "\n":              "msg_abc",
		`{"message_id":"msg_abc"}{"message_id":"x"}"}`: "",
	} {
		p, err := decodeDeliverPayload([]byte(payload))
		var q deliverPayload
		wantErr := json.Unmarshal([]byte(payload), &q)
		if (err != nil) != (wantErr != nil) || p.MessageID != q.MessageID {
			t.Errorf("decodeDeliverPayload(%s) = %q, %v; json.Unmarshal gives %q, %v", payload, p.MessageID, err, q.MessageID, wantErr)
		}
		if wantErr == nil && p.MessageID != want {
			t.Errorf("decodeDeliverPayload(%s) = %q, want %q", payload, p.MessageID, want)
		}
	}
	for _, payload := range []string{``, `{`, `{"message_id":`, `[]`, `{"message_id":"msg_abc"`} {
		if _, err := decodeDeliverPayload([]byte(payload)); err == nil {
			t.Errorf("decodeDeliverPayload(%q) succeeded, want an error", payload)
		}
	}
}
