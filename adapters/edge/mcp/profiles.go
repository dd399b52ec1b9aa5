package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// setProfileToolName is the profile tool's name.
const setProfileToolName = "set_agent_profile"

// Profiles sets agent numbers' profiles; *profiles.Service implements it.
type Profiles interface {
	Set(ctx context.Context, t profiles.Target, name, imageURL *string) ([]profiles.Result, error)
}

var _ Profiles = (*profiles.Service)(nil)

func (h *Handler) addProfileTool() error {
	if h.deps.Profiles == nil {
		return nil
	}
	set := h.deps.Profiles
	return addTool[setProfileArgs, profileAnswer](h, &sdk.Tool{
		Name:  setProfileToolName,
		Title: "Set an agent number's name and picture",
		Description: "Set the display name and/or the profile picture that one of the account's agent numbers shows its users. " +
			"Each is stored and applied where the provider allows it: a Telegram bot takes both; a WhatsApp Cloud API number takes the picture " +
			"(when the operator gave its Meta app id) but never its display name, which Meta reviews in WhatsApp Manager; the sandbox takes both. " +
			"fields says, per field, whether it was applied and why not. image_url must be a public https URL of a JPEG or PNG image of at most 5 MB. " +
			"The name is set first: when the picture then fails, the name stays set.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, accountID string, in setProfileArgs) (any, error) {
		t := profiles.Target{AccountID: accountID, AgentNumber: in.AgentNumber, Service: in.Service}
		results, err := set.Set(ctx, t, given(in.Name), given(in.ImageURL))
		if err != nil {
			return nil, err
		}
		out := profileAnswer{Fields: []profileFieldAnswer{}}
		for _, res := range results {
			n := res.Number
			out.NumberID, out.AgentNumber, out.Service, out.Provider = n.ID, n.Number, string(n.Service), string(n.Provider)
			out.Name, out.ImageURL = n.Profile.Name, n.Profile.PictureURL
			out.Fields = append(out.Fields, profileFieldAnswer{Field: res.Field, Applied: res.Outcome.Applied, Reason: res.Outcome.Reason})
		}
		return out, nil
	}, oneOf([]account.Service{account.WhatsApp, account.Telegram}, "service"))
}

// given is v, or nil when it is empty (an argument not given).
func given(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// setProfileArgs are set_agent_profile's arguments.
type setProfileArgs struct {
	AgentNumber string `json:"agent_number" jsonschema:"the agent number, in E.164 form"`
	Service     string `json:"service,omitempty" jsonschema:"which of the account's numbers it is, when the account has it on both services"`
	Name        string `json:"name,omitempty" jsonschema:"the new display name (Telegram: at most 64 characters)"`
	ImageURL    string `json:"image_url,omitempty" jsonschema:"a public https URL of the new picture, a JPEG or PNG image of at most 5 MB"`
}

// profileAnswer is set_agent_profile's answer: the number's stored
// profile and what its provider did with each field.
type profileAnswer struct {
	NumberID    string               `json:"number_id"`
	AgentNumber string               `json:"agent_number"`
	Service     string               `json:"service"`
	Provider    string               `json:"provider"`
	Name        string               `json:"name,omitempty" jsonschema:"the stored display name"`
	ImageURL    string               `json:"image_url,omitempty" jsonschema:"the stored picture URL"`
	Fields      []profileFieldAnswer `json:"fields" jsonschema:"one entry per field changed, name first"`
}

type profileFieldAnswer struct {
	Field   string `json:"field" jsonschema:"name or image_url"`
	Applied bool   `json:"applied" jsonschema:"the provider shows the new value now"`
	Reason  string `json:"reason,omitempty" jsonschema:"why it was not applied"`
}
