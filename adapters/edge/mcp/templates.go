package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// The template tools' names.
const (
	listTemplatesToolName = "list_templates"
	sendTemplateToolName  = "send_template"
)

// Templates is what the template tools need of the messaging use cases;
// *messaging.Service implements it.
type Templates interface {
	Templates(ctx context.Context, f appmessaging.TemplateFilter) ([]messaging.Template, error)
	SyncTemplates(ctx context.Context, accountID, number string) ([]messaging.Template, error)
}

var _ Templates = (*appmessaging.Service)(nil)

func (h *Handler) addTemplateTools() error {
	templates, ok := h.deps.Messaging.(Templates)
	if !ok {
		return nil
	}
	if err := addTool[listTemplatesArgs, templateList](h, &sdk.Tool{
		Name:  listTemplatesToolName,
		Title: "List message templates",
		Description: "List the account's WhatsApp message templates: for each agent number, its templates by name and language, with their status " +
			"(only APPROVED ones can be sent), their components (header, body, footer, buttons) and the variables in their texts ({{1}} or {{name}}), which send_template fills. " +
			"Templates are the only messages a WhatsApp conversation takes once 24 hours passed since the user's last message. " +
			"sync true reads them from the provider first (after templates were created or reviewed in WhatsApp Manager).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, accountID string, in listTemplatesArgs) (any, error) {
		if in.Sync {
			if _, err := templates.SyncTemplates(ctx, accountID, in.Number); err != nil {
				return nil, err
			}
		}
		list, err := templates.Templates(ctx, appmessaging.TemplateFilter{AccountID: accountID, Number: in.Number, Name: in.Name, Language: in.Language, Status: in.Status})
		if err != nil {
			return nil, err
		}
		out := templateList{Templates: make([]templateItem, len(list))}
		for i, t := range list {
			out.Templates[i] = templateItem{TemplateID: t.ProviderID, Number: t.Number, Name: t.Name, Language: t.Language, Status: t.Status,
				Category: t.Category, ParameterFormat: t.ParameterFormat, Components: t.Components}
		}
		return out, nil
	}); err != nil {
		return err
	}
	return addTool[sendTemplateArgs, sentMessage](h, &sdk.Tool{
		Name:  sendTemplateToolName,
		Title: "Send a message template",
		Description: "Send a WhatsApp message template (see list_templates) to a user, by name and language, with the parameters of its header, body and buttons: " +
			"components [{type: header|body|button, sub_type (buttons: url, quick_reply, copy_code), index (a button's position), parameters: [{type: text, text} | " +
			"{type: currency, currency: {fallback_value, code, amount_1000}} | {type: date_time, date_time: {fallback_value}} | {type: image|video|document, image: {link}} | ...]}], " +
			"one parameter per variable, in order ({{1}}, {{2}}), with parameter_name for named variables. " +
			"Templates may be sent after the 24-hour customer service window closed (when send_message answers window_closed). " +
			"A template that is not APPROVED, a wrong language, a missing or extra parameter are validation_error naming it. " +
			"The user must have written to the agent number once (conversation_not_started). The answer is the stored message, status queued.",
		Annotations: sends,
	}, func(ctx context.Context, accountID string, in sendTemplateArgs) (any, error) {
		key := in.IdempotencyKey
		in.IdempotencyKey = ""
		service := in.Service
		if service == "" {
			service = string(account.WhatsApp)
		}
		send := messaging.TemplateSend{Name: in.Name, Language: in.Language, Components: in.Components}
		return keyed(ctx, h, accountID, sendTemplateToolName, key, in, func(answer *idempotency.Completion[messaging.Message]) (messaging.Message, error) {
			return h.deps.Messaging.SendIndividual(ctx, appmessaging.SendInput{
				AccountID: accountID, Service: service, From: in.From, To: in.To, Template: &send, ReplyTo: in.ReplyTo, Idempotency: answer,
			})
		}, sentMessageOf)
	}, oneOf(services, "service"))
}

// listTemplatesArgs are list_templates' arguments.
type listTemplatesArgs struct {
	Number   string `json:"number,omitempty" jsonschema:"only this WhatsApp agent number of the account (E.164)"`
	Name     string `json:"name,omitempty" jsonschema:"only templates of this name"`
	Language string `json:"language,omitempty" jsonschema:"only templates in this language code (en_US)"`
	Status   string `json:"status,omitempty" jsonschema:"only templates of this status: APPROVED, PENDING, REJECTED, PAUSED, ..."`
	Sync     bool   `json:"sync,omitempty" jsonschema:"read the templates from the provider first"`
}

// templateList is list_templates' answer.
type templateList struct {
	Templates []templateItem `json:"templates" jsonschema:"by agent number, name and language"`
}

type templateItem struct {
	TemplateID      string                        `json:"template_id"`
	Number          string                        `json:"number" jsonschema:"the agent number whose template it is"`
	Name            string                        `json:"name"`
	Language        string                        `json:"language"`
	Status          string                        `json:"status" jsonschema:"APPROVED templates can be sent"`
	Category        string                        `json:"category"`
	ParameterFormat string                        `json:"parameter_format" jsonschema:"POSITIONAL: variables {{1}}, {{2}}; NAMED: {{name}}, each parameter giving parameter_name"`
	Components      []messaging.TemplateComponent `json:"components" jsonschema:"HEADER, BODY, FOOTER, BUTTONS, with their texts and variables"`
}

// sendTemplateArgs are send_template's arguments.
type sendTemplateArgs struct {
	Service        string                            `json:"service,omitempty" jsonschema:"whatsapp, the default: templates are WhatsApp's"`
	From           string                            `json:"from" jsonschema:"the agent number to send from, in E.164 form: one of the account's enabled WhatsApp numbers"`
	To             string                            `json:"to" jsonschema:"the user, in E.164 form (or a WhatsApp user id)"`
	Name           string                            `json:"name" jsonschema:"the template's name"`
	Language       string                            `json:"language" jsonschema:"the template's language code, e.g. en_US"`
	Components     []messaging.TemplateSendComponent `json:"components,omitempty" jsonschema:"the parameters of the header, body and buttons that take them"`
	ReplyTo        string                            `json:"reply_to,omitempty" jsonschema:"a message (msg_…) of the same thread that this one answers"`
	IdempotencyKey string                            `json:"idempotency_key,omitempty" jsonschema:"a unique string (at most 255 characters) that makes a retry safe"`
}
