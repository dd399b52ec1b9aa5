package mcp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/domain/ident"
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
			"with kind email, for the next email one of the account's addresses receives (or mailbox, or the email thread thread_id eth_…), as email; with kind any, for either. " +
			"Return {\"timed_out\": true} when none arrives within timeout_seconds (1 to " + strconv.Itoa(MaxWaitSeconds) + ", default " + strconv.Itoa(defaultWaitSeconds) + "). " +
			"Only what arrives after the call starts counts: read what came before with get_messages or list_emails. Call it again to keep listening.",
		Annotations: readOnly,
	}, h.waitForMessage, between(1, MaxWaitSeconds, "timeout_seconds"), byDefault(defaultWaitSeconds, "timeout_seconds"),
		oneOf(waitKinds, "kind"))
}

// What wait_for_message waits for.
const (
	waitMessage = "message"
	waitEmail   = "email"
	waitAny     = "any"
)

var waitKinds = []string{waitMessage, waitEmail, waitAny}

// waitArgs are wait_for_message's arguments.
type waitArgs struct {
	Kind           string `json:"kind,omitempty" jsonschema:"message (a WhatsApp or Telegram message), email (a received email) or any; by default email when thread_id is an email thread or mailbox is given, else message"`
	ThreadID       string `json:"thread_id,omitempty" jsonschema:"wait in this thread only: a conversation (thr_…) for a message, an email thread (eth_…) for an email"`
	Mailbox        string `json:"mailbox,omitempty" jsonschema:"wait for an email to this address of the account only"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait, 1 to 60 seconds"`
}

// waitAnswer is wait_for_message's answer.
type waitAnswer struct {
	TimedOut bool         `json:"timed_out" jsonschema:"true when nothing arrived in time"`
	Message  *messageItem `json:"message,omitempty" jsonschema:"the message that arrived"`
	Email    *emailView   `json:"email,omitempty" jsonschema:"the email that arrived (read it whole with get_email)"`
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
	read, stop := context.WithTimeout(ctx, h.deps.CallTimeout)
	filter, err := h.waitFilter(read, accountID, in)
	stop()
	if err != nil {
		return nil, err
	}
	got, ok, err := h.feed.wait(ctx, accountID, filter, timeout)
	if err != nil {
		return nil, err
	}
	switch {
	case !ok:
		return waitAnswer{TimedOut: true}, nil
	case got.email != nil:
		v := receivedEmailView(*got.email)
		return waitAnswer{Email: &v}, nil
	}
	item := messageItemOf(*got.message)
	return waitAnswer{Message: &item}, nil
}

// waitFilter checks wait_for_message's arguments: the kind, and that the
// thread and mailbox are the account's (not found otherwise).
func (h *Handler) waitFilter(ctx context.Context, accountID string, in waitArgs) (waitFilter, error) {
	kind := in.Kind
	if kind == "" {
		kind = waitMessage
		if strings.HasPrefix(in.ThreadID, ident.EmailThread+"_") || in.Mailbox != "" {
			kind = waitEmail
		}
	}
	f := waitFilter{messages: kind != waitEmail, emails: kind != waitMessage, threadID: in.ThreadID}
	switch {
	case !slices.Contains(waitKinds, kind):
		return f, invalid("enum", "kind must be message, email or any", "kind")
	case f.emails && h.deps.Email == nil:
		return f, invalid("value_error", "email is not configured on this server", "kind")
	case in.Mailbox != "" && !f.emails:
		return f, invalid("value_error", "mailbox is for waiting for email: give kind email or any", "mailbox")
	}
	if in.Mailbox != "" {
		mailbox, err := h.deps.Email.OwnMailbox(ctx, accountID, in.Mailbox)
		if err != nil {
			return f, err
		}
		f.mailbox = mailbox
	}
	if in.ThreadID == "" {
		return f, nil
	}
	if strings.HasPrefix(in.ThreadID, ident.EmailThread+"_") {
		if !f.emails {
			return f, invalid("value_error", "an email thread (eth_…) has emails: give kind email or any", "thread_id")
		}
		f.messages = false
		_, err := h.deps.Email.ThreadEmails(ctx, accountID, in.ThreadID)
		return f, err
	}
	if !f.messages {
		return f, invalid("value_error", "a conversation (thr_…) has messages: give an email thread (eth_…) for kind email", "thread_id")
	}
	f.emails = false
	return f, h.ownThread(ctx, accountID, in.ThreadID)
}
