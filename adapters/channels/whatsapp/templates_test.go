package whatsapp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A sync reads every page of the business account's templates, asking
// for each page after the last one's cursor while it names a next page.
func TestTemplatesAreReadPageByPage(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	fake.PageSize = 2
	fake.SetTemplates(
		whatsappfake.OrderUpdate("1001", "en_US", "APPROVED"),
		whatsappfake.OrderUpdate("1002", "es", "PAUSED"),
		whatsappfake.PlainTemplate("1003", "welcome", "en", "Welcome!"),
		whatsappfake.PlainTemplate("1004", "named", "en", "Hi {{first_name}}"),
		whatsappfake.PlainTemplate("1005", "last", "en", "The fifth"),
	)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	got, err := p.Templates(context.Background(), number, fake.Settings(appSecret, verify))
	require.NoError(t, err)
	require.Len(t, got, 5, "three pages of two, two and one")
	require.Equal(t, domain.Template{ProviderID: "1001", Name: "order_update", Language: "en_US", Status: domain.TemplateApproved, Category: "UTILITY",
		ParameterFormat: domain.ParametersPositional, Components: []domain.TemplateComponent{
			{Type: "HEADER", Format: "TEXT", Text: "Order {{1}}"},
			{Type: "BODY", Text: "Hi {{1}}, your order of {{2}} ships on {{3}}."},
			{Type: "FOOTER", Text: "Reply STOP to opt out"},
			{Type: "BUTTONS", Buttons: []domain.TemplateButton{
				{Type: "URL", Text: "Track", URL: "https://example.com/track/{{1}}"}, {Type: "QUICK_REPLY", Text: "Stop updates"}}},
		}}, got[0])
	require.Equal(t, "PAUSED", got[1].Status)
	require.Equal(t, domain.ParametersPositional, got[2].ParameterFormat, "the Graph API's default format")
	require.Equal(t, "last", got[4].Name)
	listings := fake.TemplateListings()
	require.Len(t, listings, 3)
	require.Empty(t, listings[0].Get("after"))
	require.NotEmpty(t, listings[1].Get("after"))
	require.NotEqual(t, listings[1].Get("after"), listings[2].Get("after"))
	require.Equal(t, "id,name,language,status,category,parameter_format,components", listings[0].Get("fields"))

	settings := fake.Settings(appSecret, verify)
	delete(settings, whatsapp.SettingWABAID)
	_, err = p.Templates(context.Background(), number, settings)
	require.Equal(t, "provider_misconfigured", failure.As(err).Code, "without the business account's id there is nothing to read")
}

// A template message goes out as the Cloud API reference writes it; one
// the business account does not have is the Cloud API's template error.
func TestTemplateSendRequests(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	fake.SetTemplates(whatsappfake.OrderUpdate("1001", "en_US", "APPROVED"))
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	text := func(s string) domain.TemplateParameter { return domain.TemplateParameter{Type: "text", Text: s} }
	send := domain.TemplateSend{Name: "order_update", Language: "en_US", Components: []domain.TemplateSendComponent{
		{Type: "header", Parameters: []domain.TemplateParameter{text("#123")}},
		{Type: "body", Parameters: []domain.TemplateParameter{text("Ann"),
			{Type: "currency", Currency: &domain.TemplateCurrency{FallbackValue: "$10.00", Code: "USD", Amount1000: 10000}},
			{Type: "date_time", DateTime: &domain.TemplateDateTime{FallbackValue: "Monday"}}}},
		{Type: "button", SubType: "url", Index: 0, Parameters: []domain.TemplateParameter{text("abc")}},
	}}
	out := messaging.Outbound{MessageID: "msg_t", Number: number, Settings: fake.Settings(appSecret, verify), ThreadTyp: domain.Individual,
		To: "+14155550111", Content: domain.Content{Kind: domain.KindTemplate, Text: "Hi Ann", Template: &send}}
	r, err := p.SendTemplate(context.Background(), out)
	require.NoError(t, err)
	require.Equal(t, fake.LastID(), r.ProviderMessageID)
	sent := fake.TemplateSends()
	require.Len(t, sent, 1)
	require.Equal(t, map[string]any{
		"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550111", "type": "template",
		"template": map[string]any{"name": "order_update", "language": map[string]any{"code": "en_US"}, "components": []any{
			map[string]any{"type": "header", "parameters": []any{map[string]any{"type": "text", "text": "#123"}}},
			map[string]any{"type": "body", "parameters": []any{
				map[string]any{"type": "text", "text": "Ann"},
				map[string]any{"type": "currency", "currency": map[string]any{"fallback_value": "$10.00", "code": "USD", "amount_1000": float64(10000)}},
				map[string]any{"type": "date_time", "date_time": map[string]any{"fallback_value": "Monday"}},
			}},
			map[string]any{"type": "button", "sub_type": "url", "index": "0", "parameters": []any{map[string]any{"type": "text", "text": "abc"}}},
		}},
	}, sent[0])

	send.Language = "fr"
	_, err = p.SendTemplate(context.Background(), out)
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "template_error", pe.Code)
	require.True(t, pe.Permanent)
}
