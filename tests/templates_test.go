package tests

import (
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The WhatsApp customer service window and message templates through the
// built binary, on both databases: a user's message whose provider
// timestamp is 25 hours old closes the window of its thread; free-form
// sends are refused at once on REST, GraphQL and MCP (409 window_closed
// with window_closed_at) and never reach the fake; the templates are
// synced from the fake's business account page by page and listed on
// every transport; bad template sends are 422 naming the field; a template
// send goes out as the Cloud API takes it; the user's reply opens the
// window again and free-form works. The sandbox keeps templates of its
// own and no window.
func TestWindowAndTemplatesEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Templates")
		wa, acct := f.wa, f.acct
		wa.PageSize = 2
		wa.SetTemplates(
			whatsappfake.OrderUpdate("1001", "en_US", "APPROVED"),
			whatsappfake.OrderUpdate("1002", "es", "PAUSED"),
			whatsappfake.PlainTemplate("1003", "welcome_back", "en_US", "Welcome back, {{1}}!"),
		)
		const otherAgent, sandboxAgent, sandboxUser = "+14155550196", "+14155550195", "+14155550114"
		f.b.addNumber(t, f.other.AccountID, otherAgent)
		f.b.addNumber(t, acct.AccountID, sandboxAgent)
		f.serve(t)
		api, srv, hooks := f.api, f.srv, f.hooks
		sendPath := "/v1/messages/individual/" + acct.AccountID + "/send"
		const user = "+14155550113"

		// The user wrote 25 hours ago (a notification the Cloud API
		// delivered late): the window closed an hour ago.
		wrote := time.Now().Add(-25 * time.Hour).Truncate(time.Second).UTC()
		closed := wrote.Add(24 * time.Hour).Format(time.RFC3339)
		f.waPost(t, whatsappfake.SentAt(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550113", "Pia Lund", "wamid.e2e-win-1", "Is my order on its way?"), wrote))
		thread := api.thread(t, "individual", "Pia Lund")
		requireFields(t, thread, map[string]any{"window_closes_at": closed, "window_open": false})
		threadID := thread["thread_id"].(string)
		r := api.get(t, "/v1/messages/threads/"+acct.AccountID+"/get-details/"+threadID)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		requireFields(t, r.JSON(t), map[string]any{"window_closes_at": closed, "window_open": false})

		// A free-form send is refused at once, on every transport.
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": user, "content": "Yes, tomorrow."})
		require.Equal(t, http.StatusConflict, r.StatusCode, "%s", r.Body)
		requireFields(t, r.JSON(t), map[string]any{"code": "window_closed", "window_closed_at": closed, "status": "error"})
		var gql map[string]any
		postGraphQL(t, srv.URL, acct, `mutation { sendMessage(input: {service: WHATSAPP, from: "`+chWAAgent+`", to: "`+user+`", text: "Yes"}) { id } }`, &gql)
		gqlErr := gql["errors"].([]any)[0].(map[string]any)
		require.Equal(t, map[string]any{"code": "window_closed", "windowClosedAt": closed}, gqlErr["extensions"], "%v", gql)
		postGraphQL(t, srv.URL, acct, `{ thread(id: "`+threadID+`") { windowClosesAt windowOpen } }`, &gql)
		require.Equal(t, map[string]any{"thread": map[string]any{"windowClosesAt": closed, "windowOpen": false}}, gql["data"])
		cs := connectMCP(t, srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "whatsapp", "from": chWAAgent, "to": user, "text": "Yes"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		requireFields(t, res.StructuredContent.(map[string]any), map[string]any{"code": "window_closed", "window_closed_at": closed})
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_threads", Arguments: map[string]any{}})
		require.NoError(t, err)
		requireFields(t, res.StructuredContent.(map[string]any)["threads"].([]any)[0].(map[string]any), map[string]any{"window_closes_at": closed, "window_open": false})
		require.Empty(t, wa.Sends(), "nothing was queued")

		// The templates are synced from the business account, every page.
		r = api.post(t, "/v1/templates/"+acct.AccountID+"/sync", nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		synced := r.JSON(t)["data"].([]any)
		require.Len(t, synced, 3+5, "the business account's three, and the sandbox number's own five")
		listings := wa.TemplateListings()
		require.Len(t, listings, 2, "two pages of at most two")
		require.Equal(t, "", listings[0].Get("after"))
		require.NotEmpty(t, listings[1].Get("after"))
		r = api.get(t, "/v1/templates/"+acct.AccountID+"?number=%2B14155550120&name=order_update")
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		listed := r.JSON(t)["data"].([]any)
		require.Len(t, listed, 2)
		requireFields(t, listed[0].(map[string]any), map[string]any{"template_id": "1001", "number": chWAAgent, "name": "order_update",
			"language": "en_US", "status": "APPROVED", "category": "UTILITY", "parameter_format": "POSITIONAL"})
		require.Len(t, listed[0].(map[string]any)["components"], 4)
		postGraphQL(t, srv.URL, acct, `{ templates(filter: {number: "`+chWAAgent+`", status: "PAUSED"}) { templateId language components { type format text buttons { type url } } } }`, &gql)
		require.Equal(t, []any{map[string]any{"templateId": "1002", "language": "es", "components": []any{
			map[string]any{"type": "HEADER", "format": "TEXT", "text": "Order {{1}}", "buttons": []any{}},
			map[string]any{"type": "BODY", "format": "", "text": "Hi {{1}}, your order of {{2}} ships on {{3}}.", "buttons": []any{}},
			map[string]any{"type": "FOOTER", "format": "", "text": "Reply STOP to opt out", "buttons": []any{}},
			map[string]any{"type": "BUTTONS", "format": "", "text": "", "buttons": []any{
				map[string]any{"type": "URL", "url": "https://example.com/track/{{1}}"}, map[string]any{"type": "QUICK_REPLY", "url": ""}}},
		}}}, gql["data"].(map[string]any)["templates"], "%v", gql)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_templates", Arguments: map[string]any{"number": chWAAgent, "name": "welcome_back"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		requireFields(t, res.StructuredContent.(map[string]any)["templates"].([]any)[0].(map[string]any), map[string]any{"template_id": "1003", "status": "APPROVED"})

		// Bad template sends are refused at once, naming the field.
		text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
		body := func(params ...any) map[string]any { return map[string]any{"type": "body", "parameters": params} }
		orderComponents := func(bodyParams ...any) []any {
			return []any{
				map[string]any{"type": "header", "parameters": []any{text("#123")}},
				body(bodyParams...),
				map[string]any{"type": "button", "sub_type": "url", "index": "0", "parameters": []any{text("abc")}},
			}
		}
		orderParams := []any{text("Pia"),
			map[string]any{"type": "currency", "currency": map[string]any{"fallback_value": "€24.90", "code": "EUR", "amount_1000": 24900}},
			map[string]any{"type": "date_time", "date_time": map[string]any{"fallback_value": "Friday"}}}
		send := func(template map[string]any) openapitest.Response {
			return api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": user, "template": template})
		}
		loc := func(r openapitest.Response) []any {
			return r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"].([]any)
		}
		for name, tc := range map[string]struct {
			template map[string]any
			loc      []any
		}{
			"a name it does not have": {map[string]any{"name": "order_updates", "language": "en_US"}, []any{"body", "template", "name"}},
			"a language it is not in": {map[string]any{"name": "order_update", "language": map[string]any{"code": "fr"},
				"components": orderComponents(orderParams...)}, []any{"body", "template", "language"}},
			"a paused template": {map[string]any{"name": "order_update", "language": "es", "components": orderComponents(orderParams...)},
				[]any{"body", "template", "name"}},
			"a missing parameter": {map[string]any{"name": "order_update", "language": "en_US", "components": orderComponents(orderParams[:2]...)},
				[]any{"body", "template", "components", float64(1), "parameters"}},
			"an extra parameter": {map[string]any{"name": "order_update", "language": "en_US", "components": orderComponents(append(orderParams[:3:3], text("more"))...)},
				[]any{"body", "template", "components", float64(1), "parameters", float64(3)}},
			"a missing component": {map[string]any{"name": "order_update", "language": "en_US", "components": orderComponents(orderParams...)[:2]},
				[]any{"body", "template", "components"}},
			"a parameter of the wrong type": {map[string]any{"name": "welcome_back", "language": "en_US", "components": []any{
				body(map[string]any{"type": "image", "image": map[string]any{"link": "https://media.example.com/a.png"}})}},
				[]any{"body", "template", "components", float64(0), "parameters", float64(0), "type"}},
		} {
			r := send(tc.template)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", name, r.Body)
			require.Equal(t, tc.loc, loc(r), "%s: %s", name, r.Body)
		}
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": user, "content": "x",
			"template": map[string]any{"name": "welcome_back", "language": "en_US"}})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "content beside a template: %s", r.Body)
		require.Equal(t, []any{"body", "content"}, loc(r))
		// Another account's number is not found.
		r = api.get(t, "/v1/templates/"+acct.AccountID+"?number=%2B14155550196")
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		r = api.post(t, "/v1/templates/"+acct.AccountID+"/sync?number=%2B14155550196", nil)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_template", Arguments: map[string]any{
			"from": chWAAgent, "to": user, "name": "welcome_back", "language": "en_US"}})
		require.NoError(t, err)
		require.True(t, res.IsError, "a missing parameter through MCP")
		require.Equal(t, "validation_error", res.StructuredContent.(map[string]any)["code"], "%v", res.StructuredContent)
		require.Equal(t, "components", res.StructuredContent.(map[string]any)["fields"].([]any)[0].(map[string]any)["field"])
		require.Empty(t, wa.Sends(), "refused sends reach nobody")

		// A template goes out although the window is closed.
		r = send(map[string]any{"name": "order_update", "language": map[string]any{"code": "en_US"}, "components": orderComponents(orderParams...)})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		requireFields(t, r.JSON(t), map[string]any{"status": "queued", "body": "Order #123\n\nHi Pia, your order of €24.90 ships on Friday.\n\nReply STOP to opt out"})
		sent := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, sent, "sent")
		require.Equal(t, []map[string]any{{
			"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550113", "type": "template",
			"template": map[string]any{"name": "order_update", "language": map[string]any{"code": "en_US"}, "components": []any{
				map[string]any{"type": "header", "parameters": []any{text("#123")}},
				map[string]any{"type": "body", "parameters": []any{text("Pia"),
					map[string]any{"type": "currency", "currency": map[string]any{"fallback_value": "€24.90", "code": "EUR", "amount_1000": float64(24900)}},
					map[string]any{"type": "date_time", "date_time": map[string]any{"fallback_value": "Friday"}}}},
				map[string]any{"type": "button", "sub_type": "url", "index": "0", "parameters": []any{text("abc")}},
			}},
		}}, wa.TemplateSends(), "a template message, as the Cloud API takes it")
		details := api.details(t, sent)
		requireFields(t, details, map[string]any{"message_type": "template"})
		require.Equal(t, "order_update", details["template"].(map[string]any)["name"])
		hooks.waitOne(t, "message.sent", sent)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_template", Arguments: map[string]any{
			"from": chWAAgent, "to": user, "name": "welcome_back", "language": "en_US",
			"components": []any{body(text("Pia"))}}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		api.waitStatus(t, res.StructuredContent.(map[string]any)["message_id"].(string), "sent")
		gql = map[string]any{}
		postGraphQL(t, srv.URL, acct, `mutation { sendTemplate(input: {from: "`+chWAAgent+`", to: "`+user+`",
			template: {name: "welcome_back", language: "en_US", components: [{type: "body", parameters: [{type: "text", text: "again"}]}]}})
			{ id status content { kind text template { name language } } } }`, &gql)
		require.Nil(t, gql["errors"], "%v", gql)
		require.Equal(t, map[string]any{"kind": "TEMPLATE", "text": "Welcome back, again!", "template": map[string]any{"name": "welcome_back", "language": "en_US"}},
			gql["data"].(map[string]any)["sendTemplate"].(map[string]any)["content"])
		require.Eventually(t, func() bool { return len(wa.TemplateSends()) == 3 }, chWait, chTick, "three templates reach the fake")

		// The user answers: the window is open again, and free-form goes.
		f.waPost(t, whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550113", "Pia Lund", "wamid.e2e-win-2", "Great, thanks!"))
		thread = api.thread(t, "individual", "Pia Lund")
		require.Equal(t, true, thread["window_open"])
		reopened, err := time.Parse(time.RFC3339, thread["window_closes_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(24*time.Hour), reopened, time.Minute)
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": user, "content": "You're welcome!"})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		api.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		last := wa.Sends()[len(wa.Sends())-1]
		require.Equal(t, "text", last["type"])

		// The sandbox: its own templates, sent with the same checks, and
		// no window.
		r = api.post(t, "/v1/sandbox/"+acct.AccountID+"/inbound", map[string]any{"service": "whatsapp", "from": sandboxUser, "to": sandboxAgent, "content": "Hi"})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		sandboxThread := api.thread(t, "individual", sandboxUser)
		require.NotContains(t, sandboxThread, "window_closes_at", "the sandbox has no window")
		sandboxSend := func(template map[string]any) openapitest.Response {
			return api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": sandboxAgent, "to": sandboxUser, "template": template})
		}
		r = sandboxSend(map[string]any{"name": "appointment_reminder", "language": "es", "components": []any{body(
			map[string]any{"type": "text", "parameter_name": "first_name", "text": "Ana"},
			map[string]any{"type": "text", "parameter_name": "date", "text": "lunes"})}})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, "Hola Ana, le recordamos su cita del lunes.", r.JSON(t)["body"])
		api.waitStatus(t, r.JSON(t)["message_id"].(string), "delivered")
		r = sandboxSend(map[string]any{"name": "spring_sale", "language": "en_US", "components": []any{body(text("20%"))}})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "a paused sandbox template: %s", r.Body)
		require.Equal(t, "template_not_approved", r.JSON(t)["detail"].([]any)[0].(map[string]any)["type"])
		require.Empty(t, hooks.rejections())
		srv.stop(t)
	})
}
