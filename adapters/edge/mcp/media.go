package mcp

import (
	"context"
	"encoding/json"
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// getMediaToolName is get_media's name, as clients call it.
const getMediaToolName = "get_media"

// MaxInlineImageBytes is the largest image get_media returns as image
// content; larger images, and every other kind, are answered with their
// signed link only.
const MaxInlineImageBytes = 1 << 20

func (h *Handler) addMediaTool() error {
	return addTool[getMediaArgs, mediaAnswer](h, &sdk.Tool{
		Name:  getMediaToolName,
		Title: "Open media a user sent",
		Description: "Open the image, video, audio, voice note, document or sticker of a message a user sent (message_id, as get_messages lists it). " +
			"An image of at most 1 MB comes back as image content you can look at; every file also comes with url, a signed link that streams it without credentials for an hour. " +
			"Refused with not_found for a message without media, and provider_media_not_found when the provider no longer has the file.",
		Annotations: readOnly,
	}, h.getMedia)
}

// getMediaArgs name a message.
type getMediaArgs struct {
	MessageID string `json:"message_id" jsonschema:"the message (msg_…) whose media to open"`
}

// mediaAnswer describes the media of a message.
type mediaAnswer struct {
	MessageID string `json:"message_id"`
	MediaType string `json:"media_type" jsonschema:"image, video, audio or document"`
	MimeType  string `json:"mime_type,omitempty"`
	Size      int64  `json:"size,omitempty" jsonschema:"the file's size in bytes, when known"`
	FileName  string `json:"file_name,omitempty"`
	Variant   string `json:"variant,omitempty" jsonschema:"voice for a voice note, sticker for a sticker"`
	URL       string `json:"url" jsonschema:"a signed link that streams the file without credentials until it expires"`
	Inline    bool   `json:"inline" jsonschema:"whether the image itself is in this answer's content"`
}

func (h *Handler) getMedia(ctx context.Context, accountID string, in getMediaArgs) (any, error) {
	d, err := h.deps.Messaging.Message(ctx, accountID, in.MessageID)
	if err != nil {
		return nil, err
	}
	m := d.Message
	if !m.Content.KeptByProvider() || m.Direction != messaging.Inbound {
		return nil, messaging.ErrNoMedia
	}
	c := m.Content
	out := mediaAnswer{MessageID: m.ID, MediaType: string(c.Kind), MimeType: c.MimeType, Size: c.Size, FileName: c.FileName,
		Variant: string(c.Variant), URL: c.MediaURL}
	if c.Kind != messaging.KindImage || c.Size > MaxInlineImageBytes {
		return out, nil
	}
	stream, _, err := h.deps.Messaging.Media(ctx, accountID, m.ID)
	if err != nil {
		return nil, err
	}
	defer stream.Body.Close()
	if stream.Size > MaxInlineImageBytes {
		return out, nil
	}
	data, err := io.ReadAll(io.LimitReader(stream.Body, MaxInlineImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxInlineImageBytes {
		return out, nil
	}
	out.Inline, out.MimeType, out.Size = true, stream.MimeType, int64(len(data))
	text, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return withContent{answer: out, content: []sdk.Content{
		&sdk.ImageContent{Data: data, MIMEType: stream.MimeType},
		&sdk.TextContent{Text: string(text)},
	}}, nil
}

// withContent is an answer that brings content of its own (an image)
// beside its structured content, which the content then repeats as JSON
// text for clients that read text only.
type withContent struct {
	answer  any
	content []sdk.Content
}
