package sandbox

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ messaging.TemplateProvider = Provider{}

// Templates are the sandbox's own message templates, the same for every
// sandbox WhatsApp number: a greeting without parameters, an order update
// with a header, body and button parameters, a reminder with named
// parameters in two languages, and a paused promotion that sends refuse.
func Templates() []domain.Template {
	return []domain.Template{
		{ProviderID: "sbx_tpl_hello_world", Name: "hello_world", Language: "en_US", Status: domain.TemplateApproved, Category: "UTILITY",
			ParameterFormat: domain.ParametersPositional, Components: []domain.TemplateComponent{
				{Type: "HEADER", Format: "TEXT", Text: "Hello World"},
				{Type: "BODY", Text: "Welcome and congratulations!! This message shows that your agent can send a template from the Switchboard sandbox."},
				{Type: "FOOTER", Text: "Switchboard sandbox"},
			}},
		{ProviderID: "sbx_tpl_order_update", Name: "order_update", Language: "en_US", Status: domain.TemplateApproved, Category: "UTILITY",
			ParameterFormat: domain.ParametersPositional, Components: []domain.TemplateComponent{
				{Type: "HEADER", Format: "TEXT", Text: "Order {{1}}"},
				{Type: "BODY", Text: "Hi {{1}}, your order of {{2}} ships on {{3}}."},
				{Type: "FOOTER", Text: "Reply STOP to opt out"},
				{Type: "BUTTONS", Buttons: []domain.TemplateButton{
					{Type: "URL", Text: "Track", URL: "https://example.com/track/{{1}}"},
					{Type: "QUICK_REPLY", Text: "Stop updates"},
				}},
			}},
		{ProviderID: "sbx_tpl_appointment_reminder_en", Name: "appointment_reminder", Language: "en_US", Status: domain.TemplateApproved, Category: "UTILITY",
			ParameterFormat: domain.ParametersNamed, Components: []domain.TemplateComponent{
				{Type: "BODY", Text: "Hello {{first_name}}, this is a reminder of your appointment on {{date}}."},
			}},
		{ProviderID: "sbx_tpl_appointment_reminder_es", Name: "appointment_reminder", Language: "es", Status: domain.TemplateApproved, Category: "UTILITY",
			ParameterFormat: domain.ParametersNamed, Components: []domain.TemplateComponent{
				{Type: "BODY", Text: "Hola {{first_name}}, le recordamos su cita del {{date}}."},
			}},
		{ProviderID: "sbx_tpl_spring_sale", Name: "spring_sale", Language: "en_US", Status: "PAUSED", Category: "MARKETING",
			ParameterFormat: domain.ParametersPositional, Components: []domain.TemplateComponent{
				{Type: "BODY", Text: "Spring sale: {{1}} off everything this week!"},
			}},
	}
}

// Templates lists the sandbox's own templates (Templates), for every
// sandbox WhatsApp number.
func (Provider) Templates(ctx context.Context, _ account.Number, _ map[string]string) ([]domain.Template, error) {
	return Templates(), ctx.Err()
}

// SendTemplate accepts the template message (checked against the
// template when it was sent) and reports it delivered, as Send does.
func (p Provider) SendTemplate(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	return p.Send(ctx, m)
}
