package webhooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// MediaReader opens the media of an account's message, streamed from
// where it is kept and capped per kind: the messaging use case's Media.
//
// Errors: NotFound for a message of another account or without media;
// those of the provider's download otherwise.
type MediaReader interface {
	Media(ctx context.Context, accountID, messageID string) (appmessaging.MediaStream, messaging.Message, error)
}

// The data_error values of a delivery that could not inline its media.
const (
	// InlineTooLarge: the file is larger than the endpoint's
	// inline_media_max_bytes.
	InlineTooLarge = "too_large"
	// InlineUnavailable: the file could not be fetched now (the provider
	// failed, or the message is gone); the media link still opens it.
	InlineUnavailable = "unavailable"
)

// withInlineMedia is the body of a delivery to endpoint e: the event's
// payload, where a message.received with media of at most the endpoint's
// InlineMediaMaxBytes carries the file as base64 "data" in its
// message_content, fetched now (the stored event is left as it is). When
// the file is larger, or cannot be fetched, the message goes without data
// and "data_error" says why (InlineTooLarge, InlineUnavailable).
func (s *Service) withInlineMedia(ctx context.Context, e webhook.Endpoint, d webhook.Delivery) []byte {
	if e.InlineMediaMaxBytes <= 0 || d.EventType != event.MessageReceived || s.media == nil {
		return d.Payload
	}
	var payload map[string]json.RawMessage
	var content map[string]json.RawMessage
	var messageID string
	if json.Unmarshal(d.Payload, &payload) != nil || json.Unmarshal(payload["message_content"], &content) != nil ||
		content["media_type"] == nil || json.Unmarshal(payload["message_id"], &messageID) != nil {
		return d.Payload
	}
	data, problem := s.readMedia(ctx, d.AccountID, messageID, e.InlineMediaMaxBytes)
	if problem != "" {
		content["data_error"], _ = json.Marshal(problem)
	} else {
		content["data"], _ = json.Marshal(base64.StdEncoding.EncodeToString(data))
	}
	var err error
	if payload["message_content"], err = json.Marshal(content); err != nil {
		return d.Payload
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return d.Payload
	}
	return body
}

// readMedia reads the media of a message, at most maxBytes, within the
// attempt timeout; a problem is a data_error value.
func (s *Service) readMedia(ctx context.Context, accountID, messageID string, maxBytes int64) ([]byte, string) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	stream, _, err := s.media.Media(ctx, accountID, messageID)
	if err != nil {
		return nil, InlineUnavailable
	}
	defer func() { _ = stream.Body.Close() }()
	if stream.Size > maxBytes {
		return nil, InlineTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(stream.Body, maxBytes+1))
	switch {
	case err != nil:
		return nil, InlineUnavailable
	case int64(len(data)) > maxBytes:
		return nil, InlineTooLarge
	}
	return data, ""
}
