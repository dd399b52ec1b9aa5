package webhook

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// marshalled is what json.Marshal writes for p: the bytes JSON must write.
func marshalled(t testing.TB, p MessagePayload) []byte {
	t.Helper()
	want, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return want
}

// awkward strings: every escape encoding/json makes, invalid UTF-8, and
// characters it leaves alone.
var awkward = []string{
	"", "bench message", `quote " backslash \ slash /`, "<b>&amp;</b>", "line\nbreak\r\ttab",
	"\b\f\x00\x01\x1f\x7f", "\u2028 and \u2029", "héllo wörld 日本語 🎉", "bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate",
}

func TestPayloadJSONIsWhatJSONMarshalWrites(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 18, 5, 49, 123456000, time.UTC)
	base := messaging.Message{
		ID: "msg_23ocbg6lffbl7nw7slyw47sx4h", AccountID: "acc_23ocbg6lffbl7nw7slyw47sx4h", ThreadID: "thr_23ocbg6lffbl7nw7slyw47sx4h",
		Service: "whatsapp", Direction: messaging.OutboundAPI, From: "+15550000001", To: "+15560000001",
		Content: messaging.Content{Kind: messaging.KindText, Text: "bench message"}, Status: messaging.Delivered,
	}
	var cases []messaging.Message
	for _, s := range awkward {
		m := base
		m.Content.Text, m.SenderName, m.FailureText = s, s, s
		cases = append(cases, m)
		in := m
		in.Direction, in.From, in.To, in.Status, in.FailureCode = messaging.Inbound, "+15560000001", "+15550000001", messaging.Received, "provider_error"
		cases = append(cases, in)
		media := m
		media.Content = messaging.Content{Kind: messaging.KindImage, MediaURL: "https://example.com/a.png?x=1&y=<2>", Caption: s}
		cases = append(cases, media)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 52.520008, -122.4194155, 90, -180, 1e-7, -3.5e-9, 1e-6, 123456789, 1e21, 1e300} {
		m := base
		m.Content = messaging.Content{Kind: messaging.KindLocation, Latitude: f, Longitude: -f, PlaceName: "Zoo <Berlin>", Address: "Hardenbergplatz 8"}
		cases = append(cases, m)
	}
	group := base
	group.To = ""
	cases = append(cases, group)
	for _, m := range cases {
		for _, tt := range []messaging.ThreadType{messaging.Individual, messaging.Group} {
			p := NewMessagePayload(event.MessageStatus, "evt_23ocbg6lffbl7nw7slyw47sx4h", m, tt, now)
			if got, want := p.JSON(), marshalled(t, p); !bytes.Equal(got, want) {
				t.Errorf("JSON() =\n%s\nwant (json.Marshal)\n%s", got, want)
			}
		}
	}
}

func TestPayloadJSONOfUnusualContentIsJSONMarshals(t *testing.T) {
	t.Parallel()
	for _, content := range []map[string]any{
		nil,
		{},
		{"count": 3, "nested": map[string]any{"a": "b"}}, // types the hand encoder leaves to json.Marshal
		{"flag": true, "none": nil, "text": "x"},
	} {
		p := MessagePayload{Event: event.MessageReceived, MessageContent: content}
		if got, want := p.JSON(), marshalled(t, p); !bytes.Equal(got, want) {
			t.Errorf("content %v: JSON() = %s, want %s", content, got, want)
		}
	}
	// json.Marshal refuses a NaN; so, through it, does JSON.
	p := MessagePayload{MessageContent: map[string]any{"latitude": math.NaN()}}
	if got := p.JSON(); got != nil {
		t.Errorf("JSON() of a NaN = %s, want nil as json.Marshal gives", got)
	}
}

func FuzzPayloadJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, 1.5)
	}
	f.Add("", "x", 1e-7)
	f.Fuzz(func(t *testing.T, text, name string, lat float64) {
		if math.IsNaN(lat) || math.IsInf(lat, 0) {
			return
		}
		p := MessagePayload{
			Event: event.MessageReceived, SenderName: name, Content: text, ErrorMessage: name,
			MessageContent: map[string]any{"text": text, "latitude": lat, "name": name},
		}
		if got, want := p.JSON(), marshalled(t, p); !bytes.Equal(got, want) {
			t.Errorf("JSON() =\n%s\nwant (json.Marshal)\n%s", got, want)
		}
	})
}

func BenchmarkPayloadJSON(b *testing.B) {
	m := messaging.Message{
		ID: "msg_23ocbg6lffbl7nw7slyw47sx4h", AccountID: "acc_23ocbg6lffbl7nw7slyw47sx4h", ThreadID: "thr_23ocbg6lffbl7nw7slyw47sx4h",
		Service: "whatsapp", Direction: messaging.OutboundAPI, From: "+15550000001", To: "+15560000001",
		Content: messaging.Content{Kind: messaging.KindText, Text: "bench message"}, Status: messaging.Delivered,
	}
	now := time.Now()
	for b.Loop() {
		_ = NewMessagePayload(event.MessageStatus, "evt_23ocbg6lffbl7nw7slyw47sx4h", m, messaging.Individual, now).JSON()
	}
}
