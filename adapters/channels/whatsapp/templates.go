package whatsapp

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// SettingWABAID names the setting of a number's WhatsApp Business Account
// id, whose message templates the number sends (optional; without it the
// number's templates cannot be synced).
const SettingWABAID = "waba_id"

var _ messaging.TemplateProvider = (*Provider)(nil)

// templatePage is one page of GET /{waba-id}/message_templates.
type templatePage struct {
	Data []struct {
		ID              string                     `json:"id"`
		Name            string                     `json:"name"`
		Language        string                     `json:"language"`
		Status          string                     `json:"status"`
		Category        string                     `json:"category"`
		ParameterFormat string                     `json:"parameter_format"`
		Components      []domain.TemplateComponent `json:"components"`
	} `json:"data"`
	Paging graphPaging `json:"paging"`
}

// maxTemplatePages bounds a sync: 100 pages of 100 templates is more than
// a WhatsApp Business Account may have.
const maxTemplatePages = 100

// templateFields are the fields a sync reads of each template.
const templateFields = "id,name,language,status,category,parameter_format,components"

// Templates reads every template of the number's WhatsApp Business
// Account, page by page: each page's paging.cursors.after is asked for
// while the page has a paging.next (the next page's URL, which is not
// followed itself: the requests stay on the configured Graph API server).
func (p *Provider) Templates(ctx context.Context, n account.Number, settings map[string]string) ([]domain.Template, error) {
	waba := settings[SettingWABAID]
	if waba == "" {
		return nil, &failure.Error{Kind: failure.KindNotImplemented, Code: "provider_misconfigured",
			Message: n.Number + " has no waba_id setting (its WhatsApp Business Account id, which keeps its templates): add it with switchboard numbers add --waba-id"}
	}
	var (
		out   []domain.Template
		after string
	)
	for range maxTemplatePages {
		q := url.Values{"fields": {templateFields}, "limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page templatePage
		if err := p.Client.call(ctx, settings, http.MethodGet, "/"+url.PathEscape(waba)+"/message_templates?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Data {
			format := strings.ToUpper(t.ParameterFormat)
			if format == "" {
				format = domain.ParametersPositional
			}
			out = append(out, domain.Template{ProviderID: t.ID, Name: t.Name, Language: t.Language, Status: strings.ToUpper(t.Status),
				Category: t.Category, ParameterFormat: format, Components: t.Components})
		}
		if page.Paging.Next == "" || page.Paging.Cursors.After == "" || page.Paging.Cursors.After == after {
			return out, nil
		}
		after = page.Paging.Cursors.After
	}
	return nil, &messaging.ProviderError{Code: "provider_unavailable", Message: "the WhatsApp Business Account has more than " + strconv.Itoa(maxTemplatePages) + " pages of templates"}
}

// SendTemplate sends a template message:
//
//	{"messaging_product":"whatsapp","recipient_type":"individual","to":"14155550111","type":"template",
//	 "template":{"name":"order_update","language":{"code":"en_US"},
//	   "components":[{"type":"body","parameters":[{"type":"text","text":"Ann"}]},
//	                 {"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"abc"}]}]}}
func (p *Provider) SendTemplate(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Receipt{}, err
	}
	t := m.Content.Template
	if m.ThreadTyp == domain.Group || t == nil {
		return messaging.Receipt{}, &messaging.ProviderError{Code: "not_supported_by_provider", Message: "the Cloud API sends templates to users only", Permanent: true}
	}
	body := addressed(m.To, map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "type": "template", "template": templateObject(*t)})
	return p.postMessage(ctx, m, body)
}

// postMessage posts the send body of m to the number's messages edge,
// quoting the message m answers, if any, and returns the Cloud API's id
// for it.
func (p *Provider) postMessage(ctx context.Context, m messaging.Outbound, body map[string]any) (messaging.Receipt, error) {
	if m.ReplyTo.ProviderMessageID != "" {
		// A reply quotes the message it answers.
		body["context"] = map[string]any{"message_id": m.ReplyTo.ProviderMessageID}
	}
	var out sendResult
	if err := p.Client.call(ctx, m.Settings, http.MethodPost, "/"+m.Settings[SettingPhoneNumberID]+"/messages", body, &out); err != nil {
		return messaging.Receipt{}, err
	}
	if len(out.Messages) == 0 || out.Messages[0].ID == "" {
		return messaging.Receipt{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Cloud API accepted the message without an id"}
	}
	return messaging.Receipt{ProviderMessageID: out.Messages[0].ID, Status: domain.Sent}, nil
}

// templateObject is the template object of a send: its name, language
// code and the components that carry parameters (a button's index as the
// Cloud API reference writes it, a string).
func templateObject(t domain.TemplateSend) map[string]any {
	obj := map[string]any{"name": t.Name, "language": map[string]any{"code": t.Language}}
	if len(t.Components) == 0 {
		return obj
	}
	components := make([]any, len(t.Components))
	for i, c := range t.Components {
		comp := map[string]any{"type": strings.ToLower(c.Type), "parameters": c.Parameters}
		if strings.EqualFold(c.Type, "button") {
			comp["sub_type"], comp["index"] = strings.ToLower(c.SubType), strconv.Itoa(c.Index)
		}
		components[i] = comp
	}
	obj["components"] = components
	return obj
}
