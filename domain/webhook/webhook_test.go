package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

var at = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// sign signs with a signer made for the one signature.
func sign(secrets []string, id string, now time.Time, body []byte) (webhook.Signature, error) {
	s, err := webhook.NewSigner(secrets)
	if err != nil {
		return webhook.Signature{}, err
	}
	return s.Sign(id, now, body), nil
}

// legacySignature is x-signature computed independently: hex
// HMAC-SHA256 of the timestamp followed by the raw body, keyed with the
// secret string as shown.
func legacySignature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// The Standard Webhooks example: a known secret, id, timestamp and body give
// a known signature (computed independently here, with the spec's recipe).
func TestSignMatchesTheSpecRecipe(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	sig, err := sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; sig.Standard != want {
		t.Fatalf("webhook-signature = %s, want %s (the spec's example)", sig.Standard, want)
	}
	if sig.Timestamp != "1614265330" || sig.ID != "msg_p5jXN8AQM9LWM0D4loKWxJek" {
		t.Fatalf("headers = %+v", sig)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("1614265330"))
	mac.Write(body)
	if want := hex.EncodeToString(mac.Sum(nil)); sig.Legacy != want {
		t.Fatalf("x-signature = %s, want %s", sig.Legacy, want)
	}
	if sig.LegacyPrevious != "" {
		t.Fatal("one secret: no previous signature")
	}
}

func TestSignDuringRotation(t *testing.T) {
	e := webhook.Endpoint{Secret: webhook.NewSecret()}
	old := e.Secret
	e.Rotate(webhook.NewSecret(), at)
	secrets := e.SigningSecrets(at.Add(time.Hour))
	if len(secrets) != 2 || secrets[0] != e.Secret || secrets[1] != old {
		t.Fatalf("secrets during the overlap = %v", secrets)
	}
	if got := e.SigningSecrets(at.Add(webhook.RotationOverlap)); len(got) != 1 {
		t.Fatalf("after 24 h only the new secret signs, got %d", len(got))
	}
	sig, err := sign(secrets, "whk_1", at, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(sig.Standard, " "); len(parts) != 2 || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("two signatures expected: %q", sig.Standard)
	}
	if sig.LegacyPrevious != legacySignature(old, sig.Timestamp, []byte("{}")) {
		t.Fatal("x-signature-previous is the old secret's")
	}
}

// One Signer serves many deliveries at once: every signature must be what
// fresh keys give for its own body, however the calls interleave.
func TestSignerIsReusableAndConcurrent(t *testing.T) {
	secrets := []string{webhook.NewSecret(), webhook.NewSecret()}
	signer, err := webhook.NewSigner(secrets)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 64 {
		wg.Go(func() {
			body := []byte(fmt.Sprintf(`{"n":%d}`, i))
			got := signer.Sign(fmt.Sprintf("whk_%d", i), at, body)
			want, err := sign(secrets, fmt.Sprintf("whk_%d", i), at, body)
			if err != nil || got != want || got.Legacy != legacySignature(secrets[0], got.Timestamp, body) {
				errs <- fmt.Sprintf("body %d: got %+v, want %+v (%v)", i, got, want, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if _, err := webhook.NewSigner(nil); err == nil {
		t.Fatal("no secret must be refused")
	}
	if _, err := webhook.NewSigner([]string{"whsec_!!"}); err == nil {
		t.Fatal("a secret that is not base64 must be refused")
	}
}

func TestNewSecret(t *testing.T) {
	s := webhook.NewSecret()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, webhook.SecretPrefix))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(key) != 32 {
		t.Fatalf("secret %q: %v, %d bytes", s, err, len(key))
	}
	if s == webhook.NewSecret() {
		t.Fatal("secrets repeat")
	}
}

func TestNextDelayFollowsTheScheduleWithJitter(t *testing.T) {
	for attempts := 1; attempts < len(webhook.Schedule); attempts++ {
		want := webhook.Schedule[attempts]
		for range 100 {
			d, ok := webhook.NextDelay(webhook.Schedule, attempts, 0)
			if !ok || d < want*9/10 || d > want*11/10 {
				t.Fatalf("after attempt %d: %s (want %s ±10%%)", attempts, d, want)
			}
		}
	}
	if _, ok := webhook.NextDelay(webhook.Schedule, len(webhook.Schedule), 0); ok {
		t.Fatal("eight attempts in all")
	}
	if d, _ := webhook.NextDelay(webhook.Schedule, 1, time.Minute); d != time.Minute {
		t.Fatalf("Retry-After 60 s after the first attempt: %s", d)
	}
	if d, _ := webhook.NextDelay(webhook.Schedule, 3, time.Second); d < 27*time.Minute {
		t.Fatalf("a short Retry-After does not hurry the schedule: %s", d)
	}
}

func TestFailureWindow(t *testing.T) {
	var e webhook.Endpoint
	if e.RecordFailure(at, webhook.DisableAfter) {
		t.Fatal("the first failure does not disable")
	}
	if e.RecordFailure(at.Add(webhook.DisableAfter-time.Second), webhook.DisableAfter) {
		t.Fatal("not yet five days")
	}
	if !e.RecordFailure(at.Add(webhook.DisableAfter), webhook.DisableAfter) {
		t.Fatal("five days of failures disable")
	}
}

func TestSettingsCheck(t *testing.T) {
	loopback := func(h string) bool { return h == "127.0.0.1" }
	for _, c := range []struct {
		s  webhook.Settings
		ok bool
	}{
		{webhook.Settings{URL: "https://example.com/hook"}, true},
		{webhook.Settings{URL: "http://127.0.0.1:9000/hook"}, true},
		{webhook.Settings{URL: "http://example.com/hook"}, false},
		{webhook.Settings{URL: "https://user:pw@example.com/hook"}, false},
		{webhook.Settings{URL: "https://example.com/hook#x"}, false},
		{webhook.Settings{URL: "example.com/hook"}, false},
		{webhook.Settings{URL: ""}, false},
		{webhook.Settings{URL: "https://example.com/" + strings.Repeat("a", 2100)}, false},
		{webhook.Settings{URL: "https://example.com/h", Events: []string{"message.received", "group.left"}}, true},
		{webhook.Settings{URL: "https://example.com/h", Events: []string{"message.exploded"}}, false},
		{webhook.Settings{URL: "https://example.com/h", Events: []string{"endpoint.disabled"}}, false},
	} {
		_, err := c.s.Check(loopback)
		if (err == nil) != c.ok {
			t.Errorf("%+v: err %v", c.s, err)
		}
		if err != nil && !failure.Is(err, failure.KindInvalid) {
			t.Errorf("%+v: not a validation failure: %v", c.s, err)
		}
	}
}

func TestSubscribed(t *testing.T) {
	all := webhook.Endpoint{}
	some := webhook.Endpoint{Events: []event.Type{event.MessageReceived}}
	switch {
	case !all.Subscribed(event.GroupLeft), !some.Subscribed(event.MessageReceived), some.Subscribed(event.MessageSent):
		t.Fatal("subscription by list, all without one")
	case !some.Subscribed(event.WebhookTest), all.Subscribed(event.EndpointDisabled):
		t.Fatal("the test event always goes out; the disabled record never does")
	}
}

func TestSubscribable(t *testing.T) {
	types := webhook.Subscribable()
	if len(types) != len(event.Types)-2 || types[0] != event.MessageReceived {
		t.Fatalf("every type but the test event and the disabled record, in order: %v", types)
	}
	for _, ty := range types {
		if ty == event.WebhookTest || ty == event.EndpointDisabled {
			t.Fatalf("%s is not subscribable", ty)
		}
		if _, err := (webhook.Settings{URL: "https://x.test/h", Events: []string{string(ty)}}).Check(nil); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
	}
}

func TestMessagePayload(t *testing.T) {
	in := messaging.Message{ID: "msg_1", AccountID: "acc_1", ThreadID: "thr_1", Service: "whatsapp", Direction: messaging.Inbound,
		From: "+14155550123", To: "+15550000001", SenderName: "Ann", Status: messaging.Received,
		Content: messaging.Content{Kind: messaging.KindImage, MediaURL: "https://x.test/a.png", Caption: "look"}}
	p := webhook.NewMessagePayload(event.MessageReceived, "evt_1", in, messaging.Individual, at)
	if p.IsFromAgent || p.PhoneNumber != "+15550000001" || p.SenderNumber != "+14155550123" || p.Content != "look" ||
		p.MessageContent["url"] != "https://x.test/a.png" || p.MessageType != "image" || p.Timestamp != "2026-11-22T10:00:00Z" {
		t.Fatalf("inbound payload: %+v", p)
	}
	out := in
	out.Direction, out.From, out.To = messaging.OutboundAPI, "+15550000001", "+14155550123"
	p = webhook.NewMessagePayload(event.MessageSent, "evt_2", out, messaging.Individual, at)
	if !p.IsFromAgent || p.PhoneNumber != "+15550000001" {
		t.Fatalf("outbound payload: %+v", p)
	}
}

// A payload whose content cannot be encoded (a NaN coordinate, which
// validation refuses) still goes out, without its content object.
func TestPayloadWithAnUnencodableContentKeepsItsFields(t *testing.T) {
	t.Parallel()
	p := webhook.MessagePayload{Event: "message.received", MessageID: "msg_1", MessageContent: map[string]any{"latitude": math.NaN()}}
	var got map[string]any
	if err := json.Unmarshal(p.JSON(), &got); err != nil {
		t.Fatalf("payload is not JSON: %v", err)
	}
	if got["message_id"] != "msg_1" || len(got["message_content"].(map[string]any)) != 0 {
		t.Fatalf("payload %v", got)
	}
}

// An agent message with buttons lists them; a press is a button_reply
// naming the button and the message it was on; a plain text has neither.
func TestButtonPayloads(t *testing.T) {
	t.Parallel()
	offer := messaging.Message{ID: "msg_o", AccountID: "acc_1", ThreadID: "thr_1", Service: "telegram", Direction: messaging.OutboundAPI,
		From: "+15550000001", To: "42", Status: messaging.Queued,
		Content: messaging.Content{Kind: messaging.KindText, Text: "Deliver?", Buttons: []messaging.Button{{ID: "yes", Title: "Yes"}}}}
	var got map[string]any
	if err := json.Unmarshal(webhook.NewMessagePayload(event.MessageSent, "evt_1", offer, messaging.Individual, at).JSON(), &got); err != nil {
		t.Fatal(err)
	}
	wantButtons := []any{map[string]any{"id": "yes", "title": "Yes"}}
	if !reflect.DeepEqual(got["buttons"], wantButtons) || !reflect.DeepEqual(got["message_content"], map[string]any{"text": "Deliver?", "buttons": wantButtons}) ||
		got["message_type"] != "text" || got["button_id"] != nil {
		t.Fatalf("offer payload: %v", got)
	}
	press := messaging.Message{ID: "msg_p", AccountID: "acc_1", ThreadID: "thr_1", Service: "telegram", Direction: messaging.Inbound,
		From: "42", To: "+15550000001", Status: messaging.Received, ReplyTo: messaging.Reply{MessageID: "msg_o", Text: "Deliver?"},
		Content: messaging.Content{Kind: messaging.KindButtonReply, ButtonID: "yes", Text: "Yes"}}
	got = nil
	if err := json.Unmarshal(webhook.NewMessagePayload(event.MessageReceived, "evt_2", press, messaging.Individual, at).JSON(), &got); err != nil {
		t.Fatal(err)
	}
	if got["message_type"] != "button_reply" || got["button_id"] != "yes" || got["button_title"] != "Yes" || got["content"] != "Yes" ||
		got["reply_to_message_id"] != "msg_o" || got["buttons"] != nil ||
		!reflect.DeepEqual(got["message_content"], map[string]any{"button_id": "yes", "button_title": "Yes"}) {
		t.Fatalf("press payload: %v", got)
	}
	plain := offer
	plain.Content.Buttons = nil
	got = nil
	if err := json.Unmarshal(webhook.NewMessagePayload(event.MessageSent, "evt_3", plain, messaging.Individual, at).JSON(), &got); err != nil {
		t.Fatal(err)
	}
	if _, has := got["buttons"]; has {
		t.Fatalf("plain payload: %v", got)
	}
}

// A secret of the customer's choosing keys webhook-signature with its
// bytes, unless it is a whsec_ secret, whose base64 part is the key; x-
// signature is keyed with the string either way.
func TestChosenSecrets(t *testing.T) {
	chosen := "sws_an-api-secret-of-the-template-0123"
	body := []byte(`{"event":"webhook.test"}`)
	sig, err := sign([]string{chosen}, "whk_1", at, body)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(chosen))
	mac.Write([]byte("whk_1." + sig.Timestamp + "."))
	mac.Write(body)
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); sig.Standard != want {
		t.Fatalf("webhook-signature = %s, want %s (keyed with the string's bytes)", sig.Standard, want)
	}
	if want := legacySignature(chosen, sig.Timestamp, body); sig.Legacy != want {
		t.Fatalf("x-signature = %s, want %s", sig.Legacy, want)
	}
	for secret, want := range map[string]string{
		chosen:                   "",
		webhook.NewSecret():      "",
		"short":                  "secret must be at least 24 characters",
		strings.Repeat("x", 257): "secret must be at most 256 characters",
		"a secret with spaces in it, long enough":   "secret must not contain spaces or control characters",
		"whsec_this is not base64 at all, is it?":   "secret must not contain spaces or control characters",
		"whsec_not-base64-but-long-enough-!!!!!!!!": "a signing secret that starts with whsec_ must continue in standard base64",
	} {
		err := webhook.CheckSecret(secret, "secret")
		got := ""
		if err != nil {
			fe := failure.As(err)
			if len(fe.Fields) != 1 || fmt.Sprint(fe.Fields[0].Path) != "[secret]" {
				t.Fatalf("%q: the failure names secret: %+v", secret, fe.Fields)
			}
			got = fe.Fields[0].Message
		}
		if got != want {
			t.Errorf("CheckSecret(%q) = %q, want %q", secret, got, want)
		}
	}
}
