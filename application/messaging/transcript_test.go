package messaging_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestTranscriptWritesOneLinePerMessage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	inbound := func(name, text string) messaging.Message {
		return messaging.Message{Direction: messaging.Inbound, From: "+14155550123", SenderName: name, CreatedAt: at,
			Content: messaging.Content{Kind: messaging.KindText, Text: text}, Status: messaging.Received}
	}
	outbound := func(c messaging.Content, status messaging.Status, code string) messaging.Message {
		at = at.Add(time.Minute)
		return messaging.Message{Direction: messaging.OutboundAPI, From: "+15550000001", To: "+14155550123", CreatedAt: at,
			Content: c, Status: status, FailureCode: code}
	}
	msgs := []messaging.Message{
		inbound("Ann", "Hi!"),
		outbound(messaging.Content{Kind: messaging.KindText, Text: "Hello Ann"}, messaging.Delivered, ""),
		outbound(messaging.Content{Kind: messaging.KindImage, MediaURL: "https://example.com/a.jpg", Caption: "The plan"}, messaging.Sent, ""),
		outbound(messaging.Content{Kind: messaging.KindVideo, MediaURL: "https://example.com/v.mp4"}, messaging.Failed, "media_too_large"),
		outbound(messaging.Content{Kind: messaging.KindLocation, Latitude: 37.7955, Longitude: -122.3937, PlaceName: "Ferry Building", Address: "1 Ferry Plaza"}, messaging.Sent, ""),
		inbound("", "line one\nline two\r\nthree"),
	}
	msgs[5].CreatedAt = at.Add(time.Minute).In(time.FixedZone("CET", 3600))

	want := "" +
		"[2026-11-25T10:00:00Z] Ann (+14155550123): Hi!\n" +
		"[2026-11-25T10:01:00Z] Agent (+15550000001): Hello Ann\n" +
		"[2026-11-25T10:02:00Z] Agent (+15550000001): [an image https://example.com/a.jpg] The plan\n" +
		"[2026-11-25T10:03:00Z] Agent (+15550000001): [a video https://example.com/v.mp4] (not delivered: media_too_large)\n" +
		"[2026-11-25T10:04:00Z] Agent (+15550000001): [a location: Ferry Building, 1 Ferry Plaza at 37.795500, -122.393700]\n" +
		`[2026-11-25T10:05:00Z] +14155550123: line one\nline two\nthree` + "\n"
	require.Equal(t, want, appmessaging.Transcript(msgs))
}

func TestTranscriptOfNoMessagesIsEmpty(t *testing.T) {
	t.Parallel()
	require.Empty(t, appmessaging.Transcript(nil))
}

func ExampleTranscript() {
	fmt.Print(appmessaging.Transcript([]messaging.Message{{
		Direction: messaging.Inbound, From: "+14155550123", SenderName: "Ann",
		CreatedAt: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		Content:   messaging.Content{Kind: messaging.KindText, Text: "Is the launch still on?"},
	}}))
	// Output: [2026-11-25T10:00:00Z] Ann (+14155550123): Is the launch still on?
}
