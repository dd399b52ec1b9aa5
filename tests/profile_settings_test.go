package tests

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// pictureHost serves the pictures of the profile tests on 127.0.0.1: a
// PNG, a JPEG, a text file, a PNG over 5 MB, and a redirect into a
// private range.
type pictureHost struct {
	URL       string
	png, jpeg []byte
}

func newPictureHost(t *testing.T) *pictureHost {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 192, 192))
	for y := range 192 {
		for x := range 192 {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	h := &pictureHost{}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	h.png = append([]byte(nil), b.Bytes()...)
	b.Reset()
	require.NoError(t, jpeg.Encode(&b, img, nil))
	h.jpeg = b.Bytes()
	mux := http.NewServeMux()
	serve := func(path, contentType string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body)
		})
	}
	serve("/logo.png", "image/png", h.png)
	serve("/photo.jpg", "image/jpeg", h.jpeg)
	serve("/notes.txt", "text/plain; charset=utf-8", []byte("not a picture"))
	serve("/huge.png", "image/png", append(append([]byte(nil), h.png...), make([]byte, 5<<20)...))
	mux.HandleFunc("/moved.png", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://10.9.8.7/logo.png", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// A1Base's profile-settings calls through the built binary, on both
// databases, replayed exactly as the Next.js template makes them
// (a1baseai/a1base-nextjs-template: app/api/messaging/profile/update-name/route.ts
// and app/api/messaging/profile/update-picture/route.ts: POST with
// Content-Type application/json, x-api-key and x-api-secret, the bodies
// {agent_number, name} and {agent_number, image_url}, and data.message
// read on failure). A Telegram bot's name and photo are applied through
// setMyName and setMyProfilePhoto; a WhatsApp Cloud API number's name is
// stored and not applied (Meta reviews it), its picture applied through
// the Resumable Upload API when the number has its Meta app id and stored
// with the reason otherwise; a sandbox number applies both. What is
// stored shows in the account; GraphQL (setAgentProfile,
// AgentNumber.profile) and MCP (set_agent_profile) do the same. Bad input is refused naming the field, a
// number of another account is 404, another account's credentials 403,
// and a provider that fails stores nothing.
func TestProfileSettingsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Profiles")
		pics := newPictureHost(t)
		const waAppAgent, waAppPNID, waAppDisplay = "+14155550140", "106540352242940", "+1 415-555-0140"
		waApp := whatsappfake.New(t, waAppPNID, chWAToken, waAppDisplay)
		var waAppNum numberOut
		f.b.cliJSON(t, &waAppNum, "numbers", "add", "--account", f.acct.AccountID, "--number", waAppAgent,
			"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", waAppPNID,
			"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", waApp.URL,
			"--app-id", whatsappfake.AppID)
		const sandboxAgent, otherAgent = "+14155550141", "+14155550142"
		f.b.addNumber(t, f.acct.AccountID, sandboxAgent)
		f.b.addNumber(t, f.other.AccountID, otherAgent)
		f.serve(t)
		acct, c := f.acct, f.api.client

		// The template's requests, header for header.
		template := func(call string, body map[string]any) openapitest.Response {
			t.Helper()
			return c.Do(http.MethodPost, "/v1/profile-settings/"+acct.AccountID+"/"+call, body,
				"Content-Type", "application/json", "x-api-key", acct.APIKey, "x-api-secret", acct.APISecret)
		}
		setName := func(agent, name string) openapitest.Response {
			t.Helper()
			return template("update-profile-name", map[string]any{"agent_number": agent, "name": name})
		}
		setPicture := func(agent, url string) openapitest.Response {
			t.Helper()
			return template("update-profile-picture", map[string]any{"agent_number": agent, "image_url": url})
		}
		ok := func(r openapitest.Response, field string, applied bool) map[string]any {
			t.Helper()
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			body := r.JSON(t)
			require.Equal(t, "success", body["status"])
			require.NotEmpty(t, body["message"])
			data := body["data"].(map[string]any)
			fields := data["fields"].([]any)
			require.Len(t, fields, 1)
			require.Equal(t, field, fields[0].(map[string]any)["field"])
			require.Equal(t, applied, fields[0].(map[string]any)["applied"], "%s", r.Body)
			return data
		}
		refused := func(r openapitest.Response, status int, field string) map[string]any {
			t.Helper()
			require.Equal(t, status, r.StatusCode, "%s", r.Body)
			body := r.JSON(t)
			require.NotEmpty(t, body["message"], "the template shows data.message")
			if field != "" {
				detail := body["detail"].([]any)
				require.Equal(t, []any{"body", field}, detail[0].(map[string]any)["loc"], "%s", r.Body)
				require.Contains(t, body["message"], field)
			}
			return body
		}
		profileOf := func(number string) map[string]any {
			t.Helper()
			r := f.api.get(t, "/v1/accounts/"+acct.AccountID)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			for _, n := range accountData(t, r)["numbers"].([]any) {
				if n := n.(map[string]any); n["number"] == number {
					return n["profile"].(map[string]any)
				}
			}
			t.Fatalf("no number %s", number)
			return nil
		}

		// Telegram: the bot's name and photo, applied.
		data := ok(setName(chTGAgent, "Ada from Acme"), "name", true)
		requireFields(t, data, map[string]any{"agent_number": chTGAgent, "number_id": f.tgNum.NumberID, "service": "telegram", "provider": "telegram"})
		require.Equal(t, "Ada from Acme", data["profile"].(map[string]any)["name"])
		calls := f.tg.Calls("setMyName")
		require.Len(t, calls, 1)
		require.Equal(t, map[string]any{"name": "Ada from Acme"}, calls[0].Params)
		ok(setPicture(chTGAgent, pics.URL+"/logo.png"), "image_url", true)
		photo, err := jpeg.DecodeConfig(bytes.NewReader(f.tg.Profile().Photo))
		require.NoError(t, err, "the PNG reached Telegram as a JPEG")
		require.Equal(t, 192, photo.Width)
		requireFields(t, profileOf(chTGAgent), map[string]any{"name": "Ada from Acme", "image_url": pics.URL + "/logo.png"})

		// WhatsApp without an app id: both stored, neither applied, each
		// saying why; nothing reaches the Graph API.
		r := setName(chWAAgent, "Acme Support")
		data = ok(r, "name", false)
		reason := data["fields"].([]any)[0].(map[string]any)["reason"].(string)
		require.Contains(t, reason, "WhatsApp Manager")
		require.Contains(t, r.JSON(t)["message"], "not applied")
		data = ok(setPicture(chWAAgent, pics.URL+"/photo.jpg"), "image_url", false)
		require.Contains(t, data["fields"].([]any)[0].(map[string]any)["reason"], "app_id")
		require.Empty(t, f.wa.Uploads())
		require.Empty(t, f.wa.BusinessProfilePosts())
		requireFields(t, profileOf(chWAAgent), map[string]any{"name": "Acme Support", "image_url": pics.URL + "/photo.jpg"})

		// WhatsApp with its app id: the picture goes through the
		// Resumable Upload API into the business profile.
		ok(setPicture(waAppAgent, pics.URL+"/photo.jpg"), "image_url", true)
		uploads := waApp.Uploads()
		require.Len(t, uploads, 1)
		require.Equal(t, "image/jpeg", uploads[0].Session.Get("file_type"))
		require.Equal(t, "OAuth "+chWAToken, uploads[0].Authorization)
		require.Equal(t, []map[string]any{{"messaging_product": "whatsapp", "profile_picture_handle": uploads[0].Handle}}, waApp.BusinessProfilePosts())
		got, _ := waApp.ProfilePicture()
		require.Equal(t, pics.jpeg, got, "the picture's bytes as fetched")

		// The sandbox applies both.
		ok(setName(sandboxAgent, "  Sandy  "), "name", true)
		ok(setPicture(sandboxAgent, pics.URL+"/logo.png"), "image_url", true)
		requireFields(t, profileOf(sandboxAgent), map[string]any{"name": "Sandy", "image_url": pics.URL + "/logo.png"})

		// Bad input, refused before any provider call and naming the field.
		before := len(f.tg.Calls(""))
		refused(template("update-profile-name", map[string]any{"agent_number": chTGAgent}), http.StatusUnprocessableEntity, "name")
		refused(setName(chTGAgent, "   "), http.StatusUnprocessableEntity, "name")
		refused(template("update-profile-name", map[string]any{"agent_number": chTGAgent, "name": "Ada", "image_url": pics.URL + "/logo.png"}),
			http.StatusUnprocessableEntity, "image_url")
		refused(setName(chTGAgent, strings.Repeat("n", 65)), http.StatusUnprocessableEntity, "name")
		ok(setName(chWAAgent, strings.Repeat("n", 65)), "name", false)
		refused(setName("14155550121", "Ada"), http.StatusUnprocessableEntity, "agent_number")
		refused(template("update-profile-picture", map[string]any{"agent_number": chTGAgent}), http.StatusUnprocessableEntity, "image_url")
		refused(setPicture(chTGAgent, "http://pictures.example.com/logo.png"), http.StatusUnprocessableEntity, "image_url")
		refused(setPicture(chTGAgent, "ftp://pictures.example.com/logo.png"), http.StatusUnprocessableEntity, "image_url")
		body := refused(setPicture(chTGAgent, "https://10.1.2.3/logo.png"), http.StatusUnprocessableEntity, "image_url")
		require.Equal(t, "url_forbidden", body["detail"].([]any)[0].(map[string]any)["type"])
		refused(setPicture(chTGAgent, "https://169.254.169.254/latest/meta-data"), http.StatusUnprocessableEntity, "image_url")
		body = refused(setPicture(chTGAgent, pics.URL+"/moved.png"), http.StatusUnprocessableEntity, "image_url")
		require.Equal(t, "url_forbidden", body["detail"].([]any)[0].(map[string]any)["type"], "refused when connecting, after the redirect")
		body = refused(setPicture(chTGAgent, pics.URL+"/notes.txt"), http.StatusUnprocessableEntity, "image_url")
		require.Contains(t, body["message"], "JPEG or PNG")
		body = refused(setPicture(chTGAgent, pics.URL+"/huge.png"), http.StatusUnprocessableEntity, "image_url")
		require.Contains(t, body["message"], "5 MB")
		require.Len(t, f.tg.Calls(""), before, "no bad input reached Telegram")

		// Numbers and accounts that are not the caller's.
		refused(setName(otherAgent, "Mine now"), http.StatusNotFound, "")
		refused(setName("+14155550199", "Nobody"), http.StatusNotFound, "")
		r = c.Do(http.MethodPost, "/v1/profile-settings/"+acct.AccountID+"/update-profile-name",
			map[string]any{"agent_number": chTGAgent, "name": "Intruder"}, auth(f.other.APIKey, f.other.APISecret)...)
		refused(r, http.StatusForbidden, "")
		requireFields(t, profileOf(chTGAgent), map[string]any{"name": "Ada from Acme"})

		// Telegram rate-limits the bot: 503 with Retry-After, nothing stored.
		f.tg.RateLimitNext(7)
		r = setName(chTGAgent, "Ada again")
		body = refused(r, http.StatusServiceUnavailable, "")
		require.Equal(t, "provider_unavailable", body["code"])
		require.Equal(t, "7", r.Header.Get("Retry-After"))
		require.Equal(t, "Ada from Acme", f.tg.Profile().Name)
		requireFields(t, profileOf(chTGAgent), map[string]any{"name": "Ada from Acme"})

		// GraphQL: both fields in one mutation, the profile on the number.
		var gql map[string]any
		postGraphQL(t, f.srv.URL, acct, `mutation { setAgentProfile(input: {agentNumber: "`+chTGAgent+`", name: "Ada (GraphQL)", imageUrl: "`+pics.URL+`/photo.jpg"}) {
			number { number profile { name imageUrl } } fields { field applied reason } } }`, &gql)
		require.Equal(t, map[string]any{"setAgentProfile": map[string]any{
			"number": map[string]any{"number": chTGAgent, "profile": map[string]any{"name": "Ada (GraphQL)", "imageUrl": pics.URL + "/photo.jpg"}},
			"fields": []any{map[string]any{"field": "name", "applied": true, "reason": nil}, map[string]any{"field": "image_url", "applied": true, "reason": nil}},
		}}, gql["data"], "%v", gql)
		require.Equal(t, "Ada (GraphQL)", f.tg.Profile().Name)
		require.Equal(t, pics.jpeg, f.tg.Profile().Photo)
		postGraphQL(t, f.srv.URL, acct, `mutation { setAgentProfile(input: {agentNumber: "`+chWAAgent+`", name: "Acme"}) { fields { applied reason } } }`, &gql)
		require.Equal(t, false, gql["data"].(map[string]any)["setAgentProfile"].(map[string]any)["fields"].([]any)[0].(map[string]any)["applied"], "%v", gql)
		postGraphQL(t, f.srv.URL, acct, `{ account { numbers { number profile { name } } } }`, &gql)
		require.Contains(t, gql["data"].(map[string]any)["account"].(map[string]any)["numbers"],
			map[string]any{"number": sandboxAgent, "profile": map[string]any{"name": "Sandy"}})
		for query, code := range map[string]string{
			`mutation { setAgentProfile(input: {agentNumber: "` + otherAgent + `", name: "Mine"}) { fields { applied } } }`:                      "not_found",
			`mutation { setAgentProfile(input: {agentNumber: "` + chTGAgent + `", name: " "}) { fields { applied } } }`:                          "validation_error",
			`mutation { setAgentProfile(input: {agentNumber: "` + chTGAgent + `"}) { fields { applied } } }`:                                     "validation_error",
			`mutation { setAgentProfile(input: {agentNumber: "` + chTGAgent + `", imageUrl: "https://10.0.0.7/a.png"}) { fields { applied } } }`: "validation_error",
		} {
			postGraphQL(t, f.srv.URL, acct, query, &gql)
			require.Equal(t, code, gql["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)["code"], "%s: %v", query, gql)
		}

		// MCP: the same use case as a tool; a business failure is a tool
		// result with isError and the REST code.
		cs := connectMCP(t, f.srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "set_agent_profile", Arguments: map[string]any{
			"agent_number": sandboxAgent, "name": "Sandy (MCP)", "image_url": pics.URL + "/photo.jpg"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		out := res.StructuredContent.(map[string]any)
		requireFields(t, out, map[string]any{"agent_number": sandboxAgent, "provider": "sandbox", "name": "Sandy (MCP)", "image_url": pics.URL + "/photo.jpg"})
		require.Equal(t, []any{map[string]any{"field": "name", "applied": true}, map[string]any{"field": "image_url", "applied": true}}, out["fields"])
		requireFields(t, profileOf(sandboxAgent), map[string]any{"name": "Sandy (MCP)", "image_url": pics.URL + "/photo.jpg"})
		for code, args := range map[string]map[string]any{
			"not_found":        {"agent_number": otherAgent, "name": "Mine"},
			"validation_error": {"agent_number": chTGAgent, "image_url": pics.URL + "/notes.txt"},
		} {
			res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "set_agent_profile", Arguments: args})
			require.NoError(t, err)
			require.True(t, res.IsError, "%v", args)
			require.Equal(t, code, res.StructuredContent.(map[string]any)["code"], "%v", res.Content)
		}
	})
}
