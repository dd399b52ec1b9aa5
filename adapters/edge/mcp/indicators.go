package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
)

// The tool names of read receipts and typing, as clients call them.
const (
	markReadToolName   = "mark_read"
	sendTypingToolName = "send_typing"
)

// indicates reach the user outside the system, and repeating one
// changes nothing more.
var indicates = &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}

func (h *Handler) addIndicatorTools() error {
	if err := addTool[threadArgs, readAnswer](h, &sdk.Tool{
		Name:  markReadToolName,
		Title: "Mark a conversation read",
		Description: "Mark a thread read up to its latest message from the user: WhatsApp shows the user blue ticks, and the thread's inbound messages still received become read. " +
			"Telegram bots have no read receipts: the answer says read_receipts false and nothing is sent. " +
			"Refused with no_inbound_message when the user never wrote, and not_supported_by_provider for a WhatsApp group.",
		Annotations: indicates,
	}, h.markRead); err != nil {
		return err
	}
	return addTool[threadArgs, typingAnswer](h, &sdk.Tool{
		Name:  sendTypingToolName,
		Title: "Show typing",
		Description: "Show the thread's user that the agent is typing, before a reply that takes a while: on WhatsApp for up to 25 s (it also marks their latest message read), on Telegram for up to 5 s; a reply ends it. " +
			"A thread gets at most one typing call per window: a repeat inside it sends nothing and answers sent false with retry_after_seconds. " +
			"Refused with no_inbound_message when the user never wrote, and not_supported_by_provider for a WhatsApp group.",
		Annotations: indicates,
	}, h.sendTyping)
}

// threadArgs name a thread.
type threadArgs struct {
	ThreadID string `json:"thread_id" jsonschema:"the thread (thr_…), as list_threads names it"`
}

// readAnswer is mark_read's answer.
type readAnswer struct {
	ThreadID     string `json:"thread_id"`
	Service      string `json:"service"`
	ReadReceipts bool   `json:"read_receipts" jsonschema:"false when the channel has no read receipts (Telegram bots): nothing was sent"`
	MessageID    string `json:"message_id" jsonschema:"the user's latest message, which the receipt names"`
	MarkedRead   int    `json:"marked_read" jsonschema:"how many of the user's messages became read"`
	Note         string `json:"note,omitempty" jsonschema:"why nothing was sent, when read_receipts is false"`
}

// typingAnswer is send_typing's answer.
type typingAnswer struct {
	ThreadID          string `json:"thread_id"`
	Service           string `json:"service"`
	Sent              bool   `json:"sent" jsonschema:"false when a typing call of this thread is inside its window: nothing was sent"`
	WindowSeconds     int    `json:"window_seconds" jsonschema:"how long the indicator shows at most"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty" jsonschema:"with sent false, seconds until a typing call would be sent again"`
	MessageID         string `json:"message_id" jsonschema:"the user's latest message"`
	MarkedRead        int    `json:"marked_read" jsonschema:"how many of the user's messages became read (WhatsApp's typing marks read)"`
}

func (h *Handler) markRead(ctx context.Context, accountID string, in threadArgs) (any, error) {
	res, err := h.deps.Messaging.MarkRead(ctx, accountID, in.ThreadID)
	if err != nil {
		return nil, err
	}
	out := readAnswer{ThreadID: res.ThreadID, Service: string(res.Service), ReadReceipts: res.ReadReceipts, MessageID: res.MessageID, MarkedRead: res.MarkedRead}
	if !res.ReadReceipts {
		out.Note = appmessaging.NoReadReceipts
	}
	return out, nil
}

func (h *Handler) sendTyping(ctx context.Context, accountID string, in threadArgs) (any, error) {
	res, err := h.deps.Messaging.Typing(ctx, accountID, in.ThreadID)
	if err != nil {
		return nil, err
	}
	return typingAnswer{ThreadID: res.ThreadID, Service: string(res.Service), Sent: res.Sent, WindowSeconds: res.WindowSeconds(),
		RetryAfterSeconds: res.RetryAfterSeconds(), MessageID: res.MessageID, MarkedRead: res.MarkedRead}, nil
}
