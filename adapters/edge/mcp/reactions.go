package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
)

// reactToolName is the reaction tool's name, as clients call it.
const reactToolName = "react"

func (h *Handler) addReactionTool() error {
	return addTool[reactArgs, reactAnswer](h, &sdk.Tool{
		Name:  reactToolName,
		Title: "React to a message",
		Description: "Set the agent number's reaction on a message (one emoji, e.g. 👍), replacing the one it had, or take it back with remove true: " +
			"WhatsApp shows a reaction message, Telegram a message reaction (Telegram allows only the emoji of its reaction list). " +
			"Reacting again with the same emoji changes nothing. An emoji that is not exactly one emoji is refused naming emoji.",
		Annotations: indicates,
	}, h.react)
}

// reactArgs are react's arguments.
type reactArgs struct {
	MessageID string `json:"message_id" jsonschema:"the message (msg_…) to react to, as get_messages names it"`
	Emoji     string `json:"emoji,omitempty" jsonschema:"exactly one emoji; required unless remove is true"`
	Remove    bool   `json:"remove,omitempty" jsonschema:"true takes the agent's reaction back"`
}

// reactAnswer is react's answer.
type reactAnswer struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id"`
	Emoji     string `json:"emoji" jsonschema:"the reaction set; empty when taken back"`
	Removed   bool   `json:"removed"`
}

func (h *Handler) react(ctx context.Context, accountID string, in reactArgs) (any, error) {
	r, err := h.deps.Messaging.React(ctx, appmessaging.ReactInput{AccountID: accountID, MessageID: in.MessageID, Emoji: in.Emoji, Remove: in.Remove})
	if err != nil {
		return nil, err
	}
	return reactAnswer{MessageID: r.MessageID, ThreadID: r.ThreadID, Emoji: r.Emoji, Removed: r.Removed()}, nil
}
