package messaging_test

import (
	"math"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestStatusMoves(t *testing.T) {
	t.Parallel()
	cases := []struct {
		from, to messaging.Status
		ok       bool
	}{
		{messaging.Queued, messaging.Sent, true},
		{messaging.Queued, messaging.Delivered, true},
		{messaging.Sent, messaging.Delivered, true},
		{messaging.Delivered, messaging.Read, true},
		{messaging.Queued, messaging.Failed, true},
		{messaging.Delivered, messaging.Failed, true},
		{messaging.Delivered, messaging.Sent, false}, // a late report never moves back
		{messaging.Read, messaging.Delivered, false},
		{messaging.Read, messaging.Failed, false},
		{messaging.Failed, messaging.Sent, false},
		{messaging.Sent, messaging.Sent, false},
		{messaging.Received, messaging.Read, false},
	}
	for _, c := range cases {
		if got := messaging.CanMove(c.from, c.to); got != c.ok {
			t.Errorf("CanMove(%s, %s) = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

func TestContentCheck(t *testing.T) {
	t.Parallel()
	ok := []messaging.Content{
		{Kind: messaging.KindText, Text: "hi"},
		{Kind: messaging.KindImage, MediaURL: "https://cdn.example/a.png", Caption: "c"},
		{Kind: messaging.KindDocument, MediaURL: "http://cdn.example/a.pdf"},
		{Kind: messaging.KindLocation, Latitude: -90, Longitude: 180},
	}
	for _, c := range ok {
		if err := c.Check(messaging.DefaultFields); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := map[string]messaging.Content{
		"content":    {Kind: messaging.KindText, Text: "   "},
		"content ":   {Kind: messaging.KindText, Text: strings.Repeat("x", messaging.MaxTextLength+1)},
		"media_url":  {Kind: messaging.KindImage, MediaURL: "ftp://x/a.png"},
		"media_url ": {Kind: messaging.KindVideo},
		"caption":    {Kind: messaging.KindAudio, MediaURL: "https://x/a.mp3", Caption: strings.Repeat("c", 1025)},
		"latitude":   {Kind: messaging.KindLocation, Latitude: 91},
		"longitude":  {Kind: messaging.KindLocation, Longitude: math.NaN()},
		"media_type": {Kind: "sticker", MediaURL: "https://x/a"},
	}
	for field, c := range bad {
		err := failure.As(c.Check(messaging.DefaultFields))
		if err.Kind != failure.KindInvalid || err.Fields[0].Path[0] != strings.TrimSpace(field) {
			t.Errorf("%+v: want a validation error on %s, got %+v", c, field, err)
		}
	}
}

func TestRecipientsAndMediaTypes(t *testing.T) {
	t.Parallel()
	if !messaging.ValidRecipient(account.WhatsApp, "+14155550100") || messaging.ValidRecipient(account.WhatsApp, "@someone") {
		t.Error("WhatsApp addresses users by E.164 number only")
	}
	for _, to := range []string{"+14155550100", "123456789", "-1001234567890", "@some_user"} {
		if !messaging.ValidRecipient(account.Telegram, to) {
			t.Errorf("Telegram accepts %q", to)
		}
	}
	for _, to := range []string{"@ab", "user", "", "+0123"} {
		if messaging.ValidRecipient(account.Telegram, to) {
			t.Errorf("Telegram refuses %q", to)
		}
	}
	if !messaging.AcceptsMediaType(account.WhatsApp, messaging.KindImage, "image/png; charset=binary") ||
		messaging.AcceptsMediaType(account.WhatsApp, messaging.KindImage, "image/gif") ||
		!messaging.AcceptsMediaType(account.Telegram, messaging.KindImage, "image/gif") ||
		messaging.AcceptsMediaType(account.WhatsApp, messaging.KindVideo, "video/webm") ||
		!messaging.AcceptsMediaType(account.WhatsApp, messaging.KindDocument, "application/pdf") ||
		messaging.AcceptsMediaType(account.WhatsApp, messaging.KindDocument, "") {
		t.Error("media types follow the channels' published lists")
	}
	if messaging.MaxMediaBytes(messaging.KindImage) != 5<<20 || messaging.MaxMediaBytes(messaging.KindDocument) != 100<<20 {
		t.Error("size limits: image 5 MB, video/audio 16 MB, document 100 MB")
	}
}

func TestFieldsNameWhatTheClientSent(t *testing.T) {
	t.Parallel()
	f := messaging.Fields{Base: []any{"content"}, Text: "text"}
	err := failure.As(messaging.Content{Kind: messaging.KindText}.Check(f))
	if got := err.Fields[0].Path; len(got) != 2 || got[0] != "content" || got[1] != "text" {
		t.Errorf("got %v", got)
	}
	err = failure.As(messaging.Content{Kind: messaging.KindImage, MediaURL: "ftp://x"}.Check(messaging.Fields{MediaURL: "attachment_uri"}))
	if got := err.Fields[0].Path; len(got) != 1 || got[0] != "attachment_uri" {
		t.Errorf("got %v", got)
	}
}

func TestSendPreconditions(t *testing.T) {
	t.Parallel()
	if err := messaging.CheckIndividualSend(nil); failure.As(err).Code != "conversation_not_started" {
		t.Errorf("no thread: %v", err)
	}
	if err := messaging.CheckIndividualSend(&messaging.Thread{}); failure.As(err).Code != "conversation_not_started" {
		t.Errorf("thread without an inbound message: %v", err)
	}
	members := []messaging.Participant{{Address: "+1555", IsAgent: true}, {Address: "+1666"}}
	if messaging.CheckGroupSend("+1555", members) != nil {
		t.Error("a member agent may send")
	}
	if err := messaging.CheckGroupSend("+1666", members); failure.As(err).Code != "not_group_member" {
		t.Errorf("a user's number is not an agent member: %v", err)
	}
}
