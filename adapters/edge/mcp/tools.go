package mcp

import (
	"context"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTools offers every tool the configured use cases serve.
func (h *Handler) addTools() error {
	for _, add := range []func() error{h.addMessagingTools, h.addIndicatorTools, h.addReactionTool, h.addMediaTool, h.addWaitTool, h.addEmailTools, h.addCronTools, h.addContactTools, h.addTemplateTools, h.addProfileTool} {
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}

// defaultWaitSeconds is how long wait_for_message waits when not told.
const defaultWaitSeconds = 30

func (h *Handler) addWaitTool() error {
	return addTool[waitArgs, waitAnswer](h, &sdk.Tool{
		Name:  waitToolName,
		Title: "Wait for a message",
		Description: "Wait for the next message a user sends to the account (or into thread_id, when given) and return it; " +
			"return {\"timed_out\": true} when none arrives within timeout_seconds (1 to " + strconv.Itoa(MaxWaitSeconds) + ", default " + strconv.Itoa(defaultWaitSeconds) + "). " +
			"Only messages arriving after the call starts count: read what came before with get_messages. Call it again to keep listening.",
		Annotations: readOnly,
	}, h.waitForMessage, between(1, MaxWaitSeconds, "timeout_seconds"), byDefault(defaultWaitSeconds, "timeout_seconds"))
}

// waitArgs are wait_for_message's arguments.
type waitArgs struct {
	ThreadID       string `json:"thread_id,omitempty" jsonschema:"wait for a message in this thread (thr_…) only"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait, 1 to 60 seconds"`
}

// waitAnswer is wait_for_message's answer.
type waitAnswer struct {
	TimedOut bool         `json:"timed_out" jsonschema:"true when no message arrived in time"`
	Message  *messageItem `json:"message,omitempty" jsonschema:"the message that arrived"`
}

func (h *Handler) waitForMessage(ctx context.Context, accountID string, in waitArgs) (any, error) {
	seconds := in.TimeoutSeconds
	if seconds == 0 {
		seconds = defaultWaitSeconds
	}
	if seconds < 1 || seconds > MaxWaitSeconds {
		// The input schema refuses these first; kept for callers that
		// reach the handler otherwise.
		return nil, invalid("less_than_equal", "timeout_seconds must be between 1 and "+strconv.Itoa(MaxWaitSeconds), "timeout_seconds")
	}
	timeout := time.Duration(seconds) * time.Second
	// The reads get the call deadline; the wait itself its timeout.
	ctx, cancel := context.WithTimeout(ctx, timeout+h.deps.CallTimeout)
	defer cancel()
	if in.ThreadID != "" {
		read, stop := context.WithTimeout(ctx, h.deps.CallTimeout)
		err := h.ownThread(read, accountID, in.ThreadID)
		stop()
		if err != nil {
			return nil, err
		}
	}
	m, ok, err := h.feed.wait(ctx, accountID, in.ThreadID, timeout)
	if err != nil {
		return nil, err
	}
	if !ok {
		return waitAnswer{TimedOut: true}, nil
	}
	item := messageItemOf(m)
	return waitAnswer{Message: &item}, nil
}
