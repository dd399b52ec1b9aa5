package messaging_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

var orderUpdate = messaging.Template{
	Name: "order_update", Language: "en_US", Status: messaging.TemplateApproved, Category: "UTILITY",
	ParameterFormat: messaging.ParametersPositional,
	Components: []messaging.TemplateComponent{
		{Type: "HEADER", Format: "TEXT", Text: "Order {{1}}"},
		{Type: "BODY", Text: "Hi {{1}}, your order of {{2}} ships on {{3}}. Thanks, {{1}}!"},
		{Type: "FOOTER", Text: "Reply STOP to opt out"},
		{Type: "BUTTONS", Buttons: []messaging.TemplateButton{
			{Type: "URL", Text: "Track", URL: "https://example.com/track/{{1}}"},
			{Type: "QUICK_REPLY", Text: "Stop updates"},
		}},
	},
}

func text(s string) messaging.TemplateParameter {
	return messaging.TemplateParameter{Type: "text", Text: s}
}

func orderSend() messaging.TemplateSend {
	return messaging.TemplateSend{Name: "order_update", Language: "en_US", Components: []messaging.TemplateSendComponent{
		{Type: "header", Parameters: []messaging.TemplateParameter{text("#123")}},
		{Type: "body", Parameters: []messaging.TemplateParameter{
			text("Ann"),
			{Type: "currency", Currency: &messaging.TemplateCurrency{FallbackValue: "$10.00", Code: "USD", Amount1000: 10000}},
			{Type: "date_time", DateTime: &messaging.TemplateDateTime{FallbackValue: "Monday"}},
		}},
		{Type: "button", SubType: "url", Index: 0, Parameters: []messaging.TemplateParameter{text("abc")}},
	}}
}

// fields lists a validation error's broken rules as path and type.
func fields(t *testing.T, err error) map[string]string {
	t.Helper()
	require.True(t, failure.Is(err, failure.KindInvalid), "got %v", err)
	out := map[string]string{}
	for _, f := range failure.As(err).Fields {
		out[pathOf(f.Path)] = f.Type
	}
	return out
}

func pathOf(path []any) string {
	s := ""
	for i, p := range path {
		if i > 0 {
			s += "."
		}
		switch v := p.(type) {
		case string:
			s += v
		case int:
			s += string(rune('0' + v))
		}
	}
	return s
}

func TestTemplateSendChecksParameters(t *testing.T) {
	t.Parallel()
	require.NoError(t, orderUpdate.CheckSend(orderSend(), "template"))
	require.Equal(t, []string{"1", "2", "3"}, messaging.Variables(orderUpdate.Components[1].Text), "each variable once, in order")
	require.Equal(t, "Order #123\n\nHi Ann, your order of $10.00 ships on Monday. Thanks, Ann!\n\nReply STOP to opt out", orderUpdate.Rendered(orderSend()))

	missing := orderSend()
	missing.Components[1].Parameters = missing.Components[1].Parameters[:2]
	require.Equal(t, map[string]string{"template.components.1.parameters": "missing"}, fields(t, orderUpdate.CheckSend(missing, "template")))

	extra := orderSend()
	extra.Components[1].Parameters = append(extra.Components[1].Parameters, text("more"))
	require.Equal(t, map[string]string{"template.components.1.parameters.3": "extra_forbidden"}, fields(t, orderUpdate.CheckSend(extra, "template")))

	noBody := orderSend()
	noBody.Components = append(noBody.Components[:1], noBody.Components[2:]...)
	require.Equal(t, map[string]string{"template.components": "missing"}, fields(t, orderUpdate.CheckSend(noBody, "template")))

	wrongType := orderSend()
	wrongType.Components[0].Parameters[0] = messaging.TemplateParameter{Type: "currency", Currency: &messaging.TemplateCurrency{FallbackValue: "$1", Code: "USD"}}
	require.Equal(t, map[string]string{"template.components.0.parameters.0.type": "enum"}, fields(t, orderUpdate.CheckSend(wrongType, "template")))

	// The quick reply takes an optional payload; the phone button of
	// another template nothing; a button that is not there neither.
	withPayload := orderSend()
	withPayload.Components = append(withPayload.Components, messaging.TemplateSendComponent{Type: "button", SubType: "quick_reply", Index: 1,
		Parameters: []messaging.TemplateParameter{{Type: "payload", Payload: "stop"}}})
	require.NoError(t, orderUpdate.CheckSend(withPayload, "template"))
	noSuchButton := orderSend()
	noSuchButton.Components[2].Index = 2
	require.Equal(t, map[string]string{"template.components.2": "extra_forbidden", "template.components": "missing"},
		fields(t, orderUpdate.CheckSend(noSuchButton, "template")))

	paused := orderUpdate
	paused.Status = "PAUSED"
	require.Equal(t, map[string]string{"template.name": "template_not_approved"}, fields(t, paused.CheckSend(orderSend(), "template")))
}

func TestNamedTemplateParametersNameTheirVariables(t *testing.T) {
	t.Parallel()
	welcome := messaging.Template{Name: "welcome", Language: "en", Status: messaging.TemplateApproved, ParameterFormat: messaging.ParametersNamed,
		Components: []messaging.TemplateComponent{{Type: "BODY", Text: "Welcome {{first_name}}, your code is {{code}}."}}}
	send := messaging.TemplateSend{Name: "welcome", Language: "en", Components: []messaging.TemplateSendComponent{{Type: "body", Parameters: []messaging.TemplateParameter{
		{Type: "text", Name: "first_name", Text: "Ann"}, {Type: "text", Name: "code", Text: "42"},
	}}}}
	require.NoError(t, welcome.CheckSend(send))
	require.Equal(t, "Welcome Ann, your code is 42.", welcome.Rendered(send))
	send.Components[0].Parameters[1].Name = "pin"
	require.Equal(t, map[string]string{"components.0.parameters.1.parameter_name": "value_error"}, fields(t, welcome.CheckSend(send)))
}

func TestTemplateSendForm(t *testing.T) {
	t.Parallel()
	err := messaging.CheckTemplateSend(messaging.TemplateSend{Components: []messaging.TemplateSendComponent{{Type: "footer"}, {Type: "button"}}}, "template")
	require.Equal(t, map[string]string{
		"template.name": "missing", "template.language": "missing",
		"template.components.0.type": "enum", "template.components.1.sub_type": "missing",
	}, fields(t, err))
}
