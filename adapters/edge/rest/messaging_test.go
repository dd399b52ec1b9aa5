package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestSandboxInboundCreatesThread(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		path := "/v1/sandbox/" + b.account + "/inbound"

		r := b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "hello", "sender_name": "Ada"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		first := r.JSON(t)
		require.Equal(t, "success", first["status"])
		thread := first["thread_id"].(string)
		created, err := time.Parse(time.RFC3339Nano, first["date_created"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), created, time.Minute)

		r = b.get("/v1/messages/threads/" + b.account + "/get-details/" + thread)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		details := r.JSON(t)
		require.Equal(t, map[string]any{
			"account_id": b.account, "chat_id": thread, "chat_name": "Ada", "participants": []any{agentA, userA},
		}, details["data"])
		require.Equal(t, "individual", details["thread_type"])
		require.Equal(t, "whatsapp", details["service"])
		require.Equal(t, thread, details["thread_id"])

		msg := b.details(t, first["message_id"].(string))
		require.Equal(t, "inbound", msg["direction"])
		require.Equal(t, "received", msg["status"])
		require.Equal(t, userA, msg["from"])
		require.Equal(t, agentA, msg["to"])
		require.Equal(t, "hello", msg["body"])
		require.Equal(t, "text", msg["message_type"])

		// The next message of the user, in the other body forms, lands in
		// the same thread.
		r = b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "message": "again"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, thread, r.JSON(t)["thread_id"])
		r = b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "message_type": "media",
			"media_url": "https://cdn.example.com/cat.png", "media_type": "image", "caption": "my cat"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, thread, r.JSON(t)["thread_id"])
		media := b.details(t, r.JSON(t)["message_id"].(string))
		require.Equal(t, "image", media["message_type"])
		// The simulated user's file stays at its URL, opened through the
		// message's signed media link, as a provider's file is.
		link := media["media"].(map[string]any)["url"].(string)
		require.Equal(t, link, media["attachment_uri"])
		require.True(t, strings.HasPrefix(link, "http://switchboard.test/v1/media/"+b.account+"/"), link)
		require.Equal(t, "my cat", media["body"])
		require.Len(t, b.recent(t, thread), 3)

		// Telegram users may be an @username.
		tg := b.inbound(t, "telegram", "@ada_lovelace", agentTG, "hi bot")
		require.NotEqual(t, thread, tg)

		// A message written in a group the agent number is in.
		group := b.group(t, "whatsapp", agentA, "Team", userA, userB)
		r = b.post(path, map[string]any{"service": "whatsapp", "from": userB, "to": agentA, "thread_id": group, "content": "hi all"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, group, r.JSON(t)["thread_id"])
		requireError(t, b.post(path, map[string]any{"service": "whatsapp", "from": userB, "to": agentB, "thread_id": group, "content": "hi"}), 409, "not_group_member")

		before := b.counts(t)
		requireError(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": "+14155550177", "content": "x"}), 404, "not_found")
		requireError(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentOther, "content": "x"}), 404, "not_found")
		requireError(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentDisabled, "content": "x"}), 403, "number_disabled")
		requireInvalid(t, b.post(path, map[string]any{"from": userA, "to": agentA, "content": "x"}), "body", "service")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "to": agentA, "content": "x"}), "body", "from")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "content": "x"}), "body", "to")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA}), "body", "content")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "from": "@ada_lovelace", "to": agentA, "content": "x"}), "body", "from")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "x", "sender_name": strings.Repeat("n", 201)}), "body", "sender_name")
		requireInvalid(t, b.post(path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "x", "priority": 1}), "body", "priority")
		r = b.client.Do(http.MethodPost, path, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "x"}, b.otherAuth()...)
		requireError(t, r, 403, "account_mismatch")
		// Another account cannot write to this account's number through
		// its own sandbox either.
		r = b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "x"}, b.otherAuth()...)
		requireError(t, r, 404, "not_found")
		require.Equal(t, before, b.counts(t), "refused inbound messages are not stored")
	})
}

func TestSandboxGroups(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		path := "/v1/sandbox/" + b.account + "/groups"
		r := b.post(path, map[string]any{"service": "whatsapp", "agent_number": agentA, "title": " Team ", "participants": []string{userA, userB}})
		require.Equal(t, http.StatusCreated, r.StatusCode, "body: %s", r.Body)
		data := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "Team", data["title"])
		require.Equal(t, []any{agentA, userA, userB}, data["participants"])

		r = b.get("/v1/messages/threads/" + b.account + "/get-details/" + data["thread_id"].(string))
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "group", r.JSON(t)["thread_type"])
		require.Equal(t, "Team", r.JSON(t)["chat_name"])

		valid := func() map[string]any {
			return map[string]any{"service": "whatsapp", "agent_number": agentA, "title": "T", "participants": []string{userA}}
		}
		for _, c := range []struct {
			name string
			edit func(m map[string]any)
			loc  []any
		}{
			{"no service", func(m map[string]any) { delete(m, "service") }, []any{"body", "service"}},
			{"no agent", func(m map[string]any) { delete(m, "agent_number") }, []any{"body", "agent_number"}},
			{"no title", func(m map[string]any) { delete(m, "title") }, []any{"body", "title"}},
			{"no participants", func(m map[string]any) { delete(m, "participants") }, []any{"body", "participants"}},
			{"empty participants", func(m map[string]any) { m["participants"] = []string{} }, []any{"body", "participants"}},
			{"bad participant", func(m map[string]any) { m["participants"] = []string{userA, "12"} }, []any{"body", "participants", 1}},
			{"agent listed", func(m map[string]any) { m["participants"] = []string{agentA} }, []any{"body", "participants", 0}},
			{"blank title", func(m map[string]any) { m["title"] = "  " }, []any{"body", "title"}},
			{"unknown service", func(m map[string]any) { m["service"] = "sms" }, []any{"body", "service"}},
			{"participants not a list", func(m map[string]any) { m["participants"] = userA }, []any{"body", "participants"}},
			{"unknown field", func(m map[string]any) { m["admins"] = []string{} }, []any{"body", "admins"}},
		} {
			m := valid()
			c.edit(m)
			requireInvalid(t, b.post(path, m), c.loc...)
		}
		other := valid()
		other["agent_number"] = agentOther
		requireError(t, b.post(path, other), 403, "number_not_permitted")
	})
}

func TestSendIndividual(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		img := b.media.URL + "/image.png"
		pdf := b.media.URL + "/report.pdf"
		long := strings.Repeat("é", 4096) // characters count, not bytes

		type sent struct {
			id, kind, body, attachment string
		}
		var all []sent
		for _, path := range []string{"/v1/messages/individual/" + b.account + "/send", "/v1/individual/" + b.account + "/send"} {
			for _, c := range []struct {
				name                   string
				body                   map[string]any
				kind, text, attachment string
			}{
				{"content", map[string]any{"content": "hello there"}, "text", "hello there", ""},
				{"message", map[string]any{"message": "hello again"}, "text", "hello again", ""},
				{"longest text", map[string]any{"content": long}, "text", long, ""},
				{"media", map[string]any{"message_type": "media", "media_url": img, "media_type": "image", "caption": "a dot"}, "image", "a dot", img},
				{"media without caption", map[string]any{"message_type": "media", "media_url": img, "media_type": "image"}, "image", "", img},
				{"text with attachment", map[string]any{"content": "the report", "attachment_uri": pdf}, "document", "the report", pdf},
			} {
				body := map[string]any{"from": agentA, "to": userA, "service": "whatsapp"}
				for k, v := range c.body {
					body[k] = v
				}
				r := b.post(path, body)
				require.Equal(t, http.StatusOK, r.StatusCode, "%s %s: %s", path, c.name, r.Body)
				res := r.JSON(t)
				require.Equal(t, userA, res["to"])
				require.Equal(t, agentA, res["from"])
				require.Equal(t, c.text, res["body"])
				require.Equal(t, "queued", res["status"])
				require.Equal(t, thread, res["thread_id"])
				_, err := time.Parse(time.RFC3339Nano, res["date_created"].(string))
				require.NoError(t, err)
				all = append(all, sent{id: res["message_id"].(string), kind: c.kind, body: c.text, attachment: c.attachment})
			}
		}
		for _, m := range all {
			data := b.waitStatus(t, m.id, "delivered")
			require.Equal(t, m.kind, data["message_type"], m.id)
			require.Equal(t, m.body, data["body"], m.id)
			require.Equal(t, m.attachment, data["attachment_uri"], m.id)
			require.Equal(t, "outbound-api", data["direction"])
			require.Equal(t, "", data["error_code"])
		}

		// On Telegram, to may be an @username or a chat id.
		for _, user := range []string{"@ada_lovelace", "123456789"} {
			b.inbound(t, "telegram", user, agentTG, "hi bot")
			r := b.post("/v1/individual/"+b.account+"/send", map[string]any{"from": agentTG, "to": user, "service": "telegram", "content": "hi " + user})
			require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
			require.Equal(t, user, r.JSON(t)["to"])
			b.waitStatus(t, r.JSON(t)["message_id"].(string), "delivered")
		}
	})
}

func TestSendGroup(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		group := b.group(t, "whatsapp", agentA, "Team", userA, userB)
		img := b.media.URL + "/image.png"
		var ids []string
		for _, path := range []string{"/v1/messages/group/" + b.account + "/send", "/v1/group/" + b.account + "/send"} {
			for _, c := range []struct {
				body map[string]any
				text string
			}{
				{map[string]any{"content": "hello team"}, "hello team"},
				{map[string]any{"message": "hello again", "service": "whatsapp"}, "hello again"},
				{map[string]any{"message_type": "media", "media_url": img, "media_type": "image", "caption": "look"}, "look"},
			} {
				body := map[string]any{"from": agentA, "thread_id": group}
				for k, v := range c.body {
					body[k] = v
				}
				r := b.post(path, body)
				require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", path, r.Body)
				res := r.JSON(t)
				require.Equal(t, group, res["chat_group_id"])
				require.Equal(t, group, res["thread_id"])
				require.Equal(t, agentA, res["from"])
				require.Equal(t, c.text, res["body"])
				require.Equal(t, map[string]any{"thread_id": group, "body": c.text, "status": "queued"}, res["data"],
					"data holds exactly what A1Base's Python SDK reads")
				require.Equal(t, "queued", res["status"])
				ids = append(ids, res["message_id"].(string))
			}
		}
		for _, id := range ids {
			data := b.waitStatus(t, id, "delivered")
			require.Equal(t, group, data["chat_id"])
			require.Equal(t, "Team", data["chat_name"])
			require.Equal(t, []any{agentA, userA, userB}, data["participants"])
			require.Equal(t, "", data["to"], "a group message has no single recipient")
		}
		require.Len(t, b.recent(t, group), 5)
	})
}

func TestUniversalSend(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		group := b.group(t, "whatsapp", agentA, "Team", userA)
		img := b.media.URL + "/image.png"
		path := "/v1/send/" + b.account

		contents := []struct {
			content map[string]any
			kind    string
			body    string
			media   string
		}{
			{map[string]any{"type": "text", "text": "plain"}, "text", "plain", ""},
			{map[string]any{"message": "older clients"}, "text", "older clients", ""},
			{map[string]any{"type": "media", "media_url": img, "media_type": "image", "caption": "pic"}, "image", "pic", img},
			{map[string]any{"type": "location", "latitude": 52.370216, "longitude": 4.895168, "name": "Dam Square", "address": "Amsterdam"}, "location", "Dam Square", ""},
			{map[string]any{"type": "location", "latitude": -33.856784, "longitude": 151.215297}, "location", "-33.856784,151.215297", ""},
		}
		type sent struct{ id, kind, body, media string }
		var all []sent
		for _, c := range contents {
			r := b.post(path, map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userA, "content": c.content})
			require.Equal(t, http.StatusOK, r.StatusCode, "individual %v: %s", c.content, r.Body)
			res := r.JSON(t)
			require.Equal(t, userA, res["to"])
			require.Equal(t, thread, res["thread_id"])
			require.Equal(t, c.body, res["body"])
			require.Equal(t, "queued", res["status"])
			require.NotContains(t, res, "chat_group_id")
			all = append(all, sent{res["message_id"].(string), c.kind, c.body, c.media})

			r = b.post(path, map[string]any{"from": agentA, "type": "group", "thread_id": group, "content": c.content})
			require.Equal(t, http.StatusOK, r.StatusCode, "group %v: %s", c.content, r.Body)
			res = r.JSON(t)
			require.Equal(t, group, res["chat_group_id"])
			require.Equal(t, group, res["thread_id"])
			require.Equal(t, c.body, res["body"])
			require.Equal(t, "queued", res["status"])
			require.NotContains(t, res, "to")
			all = append(all, sent{res["message_id"].(string), c.kind, c.body, c.media})
		}
		for _, m := range all {
			data := b.waitStatus(t, m.id, "delivered")
			require.Equal(t, m.kind, data["message_type"])
			require.Equal(t, m.body, data["body"])
			require.Equal(t, m.media, data["attachment_uri"])
		}
	})
}

func TestMessageDetails(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		r := b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "hello"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		sent := r.JSON(t)
		id := sent["message_id"].(string)
		contact, _ := sent["contact_id"].(string)
		require.True(t, strings.HasPrefix(contact, "con_"), "the send answers the contact of the user: %v", sent)
		require.Equal(t, map[string]any{"to": userA, "from": agentA, "body": "hello", "status": "queued"}, sent["data"],
			"data holds exactly what A1Base's Python SDK reads")
		b.waitStatus(t, id, "delivered")

		r = b.get("/v1/messages/individual/" + b.account + "/get-details/" + id)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		top := r.JSON(t)
		data := top["data"].(map[string]any)
		require.Equal(t, "success", top["status"], "the top-level status is the envelope's")
		require.Equal(t, "delivered", data["status"], "the message's status is in data")
		for k, v := range data {
			if k != "status" {
				require.Equal(t, v, top[k], "field %s is at both levels", k)
			}
		}
		require.Len(t, top, len(data)+1, "the top level has data's fields and data")
		require.Equal(t, map[string]any{
			"chat_id": thread, "chat_name": userA, "participants": []any{agentA, userA}, "account_id": b.account,
			"message_id": id, "to": userA, "from": agentA, "body": "hello", "status": "delivered",
			"date_created": sent["date_created"], "direction": "outbound-api", "attachment_uri": "", "thread_id": thread,
			"service": "whatsapp", "message_type": "text", "error_code": "", "error_message": "",
			"date_updated": data["date_updated"], "contact_id": contact,
		}, data)
		updated, err := time.Parse(time.RFC3339Nano, data["date_updated"].(string))
		require.NoError(t, err)
		created, err := time.Parse(time.RFC3339Nano, data["date_created"].(string))
		require.NoError(t, err)
		require.False(t, updated.Before(created))
	})
}

func TestThreadLists(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		// Seven users write, one after the other; then a group without
		// messages is created, which is the newest thread.
		var users, threads []string
		for i := 1; i <= 7; i++ {
			user := fmt.Sprintf("+1415555020%d", i)
			users = append(users, user)
			threads = append(threads, b.inbound(t, "whatsapp", user, agentA, "from "+user))
		}
		group := b.group(t, "whatsapp", agentA, "Quiet group", users[0], userB)
		newestFirst := []string{group}
		for i := len(threads) - 1; i >= 0; i-- {
			newestFirst = append(newestFirst, threads[i])
		}

		list := func(suffix string) map[string]any {
			t.Helper()
			r := b.get("/v1/messages/threads/" + b.account + "/get-all" + suffix)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", suffix, r.Body)
			body := r.JSON(t)
			require.Equal(t, "success", body["status"])
			require.Equal(t, body["data"], body["threads"])
			return body
		}
		ids := func(body map[string]any) []string {
			out := []string{}
			for _, it := range body["data"].([]any) {
				out = append(out, it.(map[string]any)["thread_id"].(string))
			}
			return out
		}

		all := list("")
		require.EqualValues(t, 8, all["total_count"])
		require.Equal(t, false, all["has_more"])
		require.Equal(t, newestFirst, ids(all))
		for _, it := range all["data"].([]any) {
			item := it.(map[string]any)
			require.Equal(t, item["thread_id"], item["chat_id"])
			require.Equal(t, "whatsapp", item["service"])
			if item["thread_id"] == group {
				require.Equal(t, "group", item["thread_type"])
				require.Equal(t, "Quiet group", item["chat_name"])
				require.NotContains(t, item, "last_message", "omitted, not null, for a thread without messages")
				continue
			}
			require.Equal(t, "individual", item["thread_type"])
			last := item["last_message"].(map[string]any)
			user := item["participants"].([]any)[1].(string)
			require.Equal(t, "from "+user, last["content"])
			require.Equal(t, user, last["sender_name"], "a sender without a name is named by its number")
		}

		// Pages of three cover every thread once, in order.
		var paged []string
		for offset, more := range map[int]bool{0: true, 3: true, 6: false} {
			page := list(fmt.Sprintf("?limit=3&offset=%d", offset))
			require.EqualValues(t, 8, page["total_count"])
			require.Equal(t, more, page["has_more"], "offset %d", offset)
			require.Equal(t, newestFirst[offset:min(offset+3, 8)], ids(page))
			paged = append(paged, ids(page)...)
		}
		require.ElementsMatch(t, newestFirst, paged)
		past := list("?offset=50")
		require.Empty(t, past["data"])
		require.EqualValues(t, 8, past["total_count"])
		require.Equal(t, false, past["has_more"])
		require.Len(t, list("?limit=1000")["data"], 8)

		// By phone number, with or without the leading +.
		for _, phone := range []string{users[0], strings.TrimPrefix(users[0], "+")} {
			byPhone := list("/" + phone)
			require.EqualValues(t, 2, byPhone["total_count"], phone)
			require.Equal(t, []string{group, threads[0]}, ids(byPhone))
		}
		require.Equal(t, []string{threads[2]}, ids(list("/"+users[2])))
		require.Equal(t, newestFirst[:2], ids(list("/"+agentA+"?limit=2")))
		require.EqualValues(t, 8, list("/" + agentA + "?limit=2")["total_count"])
		none := list("/" + agentB)
		require.Equal(t, []any{}, none["data"])
		require.EqualValues(t, 0, none["total_count"])
		require.Equal(t, false, none["has_more"])

		for _, q := range []struct{ query, param string }{
			{"limit=-1", "limit"}, {"limit=0", "limit"}, {"limit=x", "limit"}, {"limit=1.5", "limit"},
			{"offset=-1", "offset"}, {"offset=x", "offset"},
		} {
			for _, suffix := range []string{"", "/" + users[0]} {
				r := b.get("/v1/messages/threads/" + b.account + "/get-all" + suffix + "?" + q.query)
				requireInvalid(t, r, "query", q.param)
			}
		}
	})
}

func TestThreadListLimitIsClamped(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		// 101 groups, stored in one batch to keep the test quick.
		now := time.Now().UTC().Truncate(time.Microsecond)
		var groups writes.Batch
		for i := 0; i < messaging.MaxListLimit+1; i++ {
			at := now.Add(time.Duration(i) * time.Millisecond)
			groups.Threads = append(groups.Threads, writes.NewThread{Thread: domain.Thread{
				ID: ident.New(ident.Thread), AccountID: b.account, Service: account.WhatsApp, Type: domain.Group,
				AgentNumber: agentA, Name: fmt.Sprint("Group ", i), CreatedAt: at, UpdatedAt: at,
			}, Participants: []domain.Participant{{Address: agentA, IsAgent: true, Admin: true}, {Address: userA}}})
		}
		require.NoError(t, b.db.Commit(context.Background(), groups))
		r := b.get("/v1/messages/threads/" + b.account + "/get-all?limit=1000")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		body := r.JSON(t)
		require.Len(t, body["data"], 100)
		require.EqualValues(t, 101, body["total_count"])
		require.Equal(t, true, body["has_more"])

		r = b.get("/v1/messages/threads/" + b.account + "/get-all")
		require.Len(t, r.JSON(t)["data"], 20, "the default page size")
		r = b.get("/v1/messages/threads/" + b.account + "/get-all?limit=1000&offset=100")
		require.Len(t, r.JSON(t)["data"], 1)
		require.Equal(t, false, r.JSON(t)["has_more"])
	})
}

func TestRecentMessages(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		send := "/v1/messages/individual/" + b.account + "/send"
		inbound := "/v1/sandbox/" + b.account + "/inbound"
		var ids []string
		var thread string
		for i := 0; i < 7; i++ {
			var r openapitest.Response
			if i%2 == 0 {
				r = b.post(inbound, map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": fmt.Sprint("m", i), "sender_name": "Ada"})
			} else {
				r = b.post(send, map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": fmt.Sprint("m", i)})
			}
			require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
			ids = append(ids, r.JSON(t)["message_id"].(string))
			thread = r.JSON(t)["thread_id"].(string)
		}

		r := b.get("/v1/messages/threads/" + b.account + "/get-recent/" + thread)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		body := r.JSON(t)
		require.Equal(t, "success", body["status"])
		require.Equal(t, thread, body["thread_id"])
		require.Equal(t, b.account, body["account_id"])
		require.Equal(t, body["data"], body["messages"])
		items := body["data"].([]any)
		require.Len(t, items, 5, "at most five")
		var prev time.Time
		for i, it := range items {
			m := it.(map[string]any)
			n := 6 - i // newest first
			require.Equal(t, ids[n], m["message_id"], "position %d", i)
			require.Equal(t, fmt.Sprint("m", n), m["content"])
			require.Equal(t, m["content"], m["body"])
			require.Equal(t, m["from"], m["sender_number"])
			require.Equal(t, m["date_sent"], m["timestamp"])
			require.Equal(t, thread, m["thread_id"])
			require.Equal(t, "whatsapp", m["service"])
			require.Equal(t, "text", m["message_type"])
			if n%2 == 0 {
				require.Equal(t, "inbound", m["direction"])
				require.Equal(t, userA, m["from"])
				require.Equal(t, "Ada", m["sender_name"])
				require.Equal(t, "received", m["status"])
			} else {
				require.Equal(t, "outbound-api", m["direction"])
				require.Equal(t, agentA, m["from"])
				require.Equal(t, agentA, m["sender_name"])
				require.Contains(t, []string{"queued", "sent", "delivered"}, m["status"])
			}
			at, err := time.Parse(time.RFC3339Nano, m["date_sent"].(string))
			require.NoError(t, err)
			if i > 0 {
				require.False(t, at.After(prev), "newest first")
			}
			prev = at
		}

		group := b.group(t, "whatsapp", agentA, "Empty", userB)
		require.Equal(t, []any{}, b.recent(t, group))
	})
}

// seedThread stores an individual thread of agentA with user, and its
// messages as sends and inbound messages commit them, so that a test
// chooses their times.
func (b *msgBundle) seedThread(t *testing.T, user string, messages func(th domain.Thread) []domain.Message) domain.Thread {
	t.Helper()
	ctx := context.Background()
	created := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	th := domain.Thread{ID: ident.New(ident.Thread), AccountID: b.account, Service: account.WhatsApp, Type: domain.Individual,
		AgentNumber: agentA, Contact: user, CreatedAt: created, UpdatedAt: created}
	require.NoError(t, b.db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th,
		Participants: []domain.Participant{{Address: agentA, IsAgent: true}, {Address: user}}}}, Messages: messages(th)}))
	return th
}

// historyMessage is a message of th at a time: from the user when
// inbound, from the agent number otherwise.
func historyMessage(th domain.Thread, dir domain.Direction, senderName string, c domain.Content, at time.Time) domain.Message {
	m := domain.Message{ID: ident.New(ident.Message), AccountID: th.AccountID, ThreadID: th.ID, Service: th.Service, Direction: dir,
		From: th.AgentNumber, To: th.Contact, Content: c, Status: domain.Sent, CreatedAt: at, UpdatedAt: at}
	if dir == domain.Inbound {
		m.From, m.To, m.SenderName, m.Status = th.Contact, th.AgentNumber, senderName, domain.Received
	}
	return m
}

// historyPage reads one page of get-messages as JSON and returns its
// items and next_cursor ("" when null).
func (b *msgBundle) historyPage(t *testing.T, threadID, query string) ([]any, string) {
	t.Helper()
	r := b.get("/v1/messages/threads/" + b.account + "/get-messages/" + threadID + query)
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	body := r.JSON(t)
	require.Equal(t, "success", body["status"])
	require.Contains(t, body, "next_cursor", "present, null on the last page")
	next, _ := body["next_cursor"].(string)
	return body["data"].([]any), next
}

func itemIDs(items []any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)["message_id"].(string)
	}
	return out
}

func TestGetMessagesPagesTheWholeThread(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		// 45 messages of the last hour, inbound and outbound.
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
		var seeded []domain.Message
		th := b.seedThread(t, userA, func(th domain.Thread) []domain.Message {
			for i := range 45 {
				dir := domain.Inbound
				if i%3 == 2 {
					dir = domain.OutboundAPI
				}
				seeded = append(seeded, historyMessage(th, dir, "Ada", domain.Content{Kind: domain.KindText, Text: fmt.Sprint("m", i)},
					base.Add(time.Duration(i)*time.Second)))
			}
			return seeded
		})
		want := make([]string, len(seeded))
		for i, m := range seeded {
			want[len(seeded)-1-i] = m.ID
		}

		t.Run("FirstPageHasTheItemsOfGetRecent", func(t *testing.T) {
			items, next := b.historyPage(t, th.ID, "")
			require.Len(t, items, 20, "the default limit")
			require.Equal(t, want[:20], itemIDs(items), "newest first")
			require.NotEmpty(t, next)
			require.Equal(t, b.recent(t, th.ID), items[:5], "each item exactly as get-recent shows it")
		})

		t.Run("WalkingThePagesYieldsEveryMessageOnceWhileMessagesArrive", func(t *testing.T) {
			var walked []string
			var sizes []int
			query := "?limit=20"
			for range 5 {
				items, next := b.historyPage(t, th.ID, query)
				walked = append(walked, itemIDs(items)...)
				sizes = append(sizes, len(items))
				if next == "" {
					break
				}
				// A new message arrives between pages: it is newer than
				// every page, and moves none.
				r := b.post("/v1/sandbox/"+b.account+"/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "new"})
				require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
				require.Equal(t, th.ID, r.JSON(t)["thread_id"])
				query = "?limit=20&before=" + next
			}
			require.Equal(t, []int{20, 20, 5}, sizes)
			require.Equal(t, want, walked, "every message once, newest first")

			items, _ := b.historyPage(t, th.ID, "?limit=3")
			require.Equal(t, "new", items[0].(map[string]any)["content"], "a new walk starts at the newest")
		})

		t.Run("LimitIsValidatedAndClamped", func(t *testing.T) {
			path := "/v1/messages/threads/" + b.account + "/get-messages/" + th.ID
			item := requireInvalid(t, b.get(path+"?limit=abc"), "query", "limit")
			require.Equal(t, "int_parsing", item["type"])
			item = requireInvalid(t, b.get(path+"?limit=0"), "query", "limit")
			require.Equal(t, "greater_than_equal", item["type"])
			requireInvalid(t, b.get(path+"?limit=-5"), "query", "limit")
			requireInvalid(t, b.get(path+"?format=xml"), "query", "format")

			// Above the maximum is clamped, as the thread lists do.
			items, next := b.historyPage(t, th.ID, "?limit=1000")
			require.Len(t, items, 45+2, "the whole thread fits in 100")
			require.Empty(t, next, "the last page")
			items, next = b.historyPage(t, th.ID, "?limit=1")
			require.Len(t, items, 1)
			require.NotEmpty(t, next)
		})

		t.Run("ABadCursorIs422", func(t *testing.T) {
			path := "/v1/messages/threads/" + b.account + "/get-messages/" + th.ID
			_, next := b.historyPage(t, th.ID, "?limit=5")
			require.NotEmpty(t, next)
			edited := []byte(next)
			edited[10] ^= 'A' ^ 'B'
			for name, cursor := range map[string]string{
				"edited":    string(edited),
				"cut short": next[:len(next)-3],
				"garbage":   "bm90LWEtY3Vyc29y",
				"not text":  "%ff%fe",
			} {
				item := requireInvalid(t, b.get(path+"?before="+cursor), "query", "before")
				require.Contains(t, item["msg"], "malformed or was altered", name)
				require.Equal(t, "value_error", item["type"], name)
			}

			// A cursor of another of the account's threads.
			other := b.inbound(t, "whatsapp", userB, agentA, "elsewhere")
			_, otherNext := b.historyPage(t, other, "?limit=1")
			require.Empty(t, otherNext, "one message, one page")
			b.inbound(t, "whatsapp", userB, agentA, "again")
			_, otherNext = b.historyPage(t, other, "?limit=1")
			require.NotEmpty(t, otherNext)
			item := requireInvalid(t, b.get(path+"?before="+otherNext), "query", "before")
			require.Contains(t, item["msg"], "another thread")
			item = requireInvalid(t, b.get("/v1/messages/threads/"+b.account+"/get-messages/"+other+"?before="+next), "query", "before")
			require.Contains(t, item["msg"], "another thread")
		})

		t.Run("AThreadOfAnotherAccountOrNoneIs404AsInGetRecent", func(t *testing.T) {
			_, next := b.historyPage(t, th.ID, "?limit=5")
			theirs := b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/inbound",
				map[string]any{"service": "whatsapp", "from": userA, "to": agentOther, "content": "theirs"}, b.otherAuth()...)
			require.Equal(t, http.StatusOK, theirs.StatusCode, "body: %s", theirs.Body)
			theirThread := theirs.JSON(t)["thread_id"].(string)

			for name, threadID := range map[string]string{
				"another account's": theirThread,
				"missing":           ident.New(ident.Thread),
				"malformed":         "thr_not-an-id!",
			} {
				recent := b.get("/v1/messages/threads/" + b.account + "/get-recent/" + threadID)
				requireError(t, recent, http.StatusNotFound, "not_found")
				for _, query := range []string{"", "?format=transcript", "?before=" + next} {
					r := b.get("/v1/messages/threads/" + b.account + "/get-messages/" + threadID + query)
					require.Equal(t, http.StatusNotFound, r.StatusCode, "%s%s: %s", name, query, r.Body)
					require.JSONEq(t, string(recent.Body), string(r.Body), "%s%s: the same answer as get-recent", name, query)
				}
			}
			// The other account reading our thread through its own path.
			r := b.client.Do(http.MethodGet, "/v1/messages/threads/"+b.other+"/get-messages/"+th.ID, nil, b.otherAuth()...)
			requireError(t, r, http.StatusNotFound, "not_found")
			r = b.client.Do(http.MethodGet, "/v1/messages/threads/"+b.other+"/get-messages/"+th.ID+"?before="+next, nil, b.otherAuth()...)
			requireError(t, r, http.StatusNotFound, "not_found")
		})
	})
}

func TestGetMessagesTranscript(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		at := func(hms string) time.Time {
			v, err := time.Parse(time.RFC3339, "2026-11-25T"+hms+"Z")
			require.NoError(t, err)
			return v
		}
		th := b.seedThread(t, userB, func(th domain.Thread) []domain.Message {
			return []domain.Message{
				historyMessage(th, domain.Inbound, "Ann", domain.Content{Kind: domain.KindText, Text: "Can you send the map?\nThanks"}, at("10:00:00")),
				historyMessage(th, domain.OutboundAPI, "", domain.Content{Kind: domain.KindLocation, Latitude: 52.37, Longitude: 4.89,
					PlaceName: "Dam Square", Address: "Dam 1, Amsterdam"}, at("10:00:40")),
				historyMessage(th, domain.Inbound, "Ann", domain.Content{Kind: domain.KindImage, MediaURL: "https://cdn.example.com/dam.jpg",
					Caption: `Is this "it"?`}, at("10:01:05")),
				historyMessage(th, domain.OutboundAPI, "", domain.Content{Kind: domain.KindDocument, MediaURL: "https://cdn.example.com/plan.pdf"}, at("10:02:00")),
				historyMessage(th, domain.Inbound, "", domain.Content{Kind: domain.KindText, Text: "ok"}, at("10:03:00")),
			}
		})
		lines := []string{
			`[2026-11-25T10:00:00Z] Ann (+14155550112): Can you send the map?\nThanks`,
			`[2026-11-25T10:00:40Z] agent (+14155550100): [location: 52.37, 4.89 "Dam Square" address "Dam 1, Amsterdam"]`,
			`[2026-11-25T10:01:05Z] Ann (+14155550112): [image: https://cdn.example.com/dam.jpg caption "Is this \"it\"?"]`,
			`[2026-11-25T10:02:00Z] agent (+14155550100): [document: https://cdn.example.com/plan.pdf]`,
			`[2026-11-25T10:03:00Z] +14155550112: ok`,
		}
		path := "/v1/messages/threads/" + b.account + "/get-messages/" + th.ID

		r := b.get(path + "?format=transcript")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "text/plain; charset=utf-8", r.Header.Get("Content-Type"))
		require.Equal(t, strings.Join(lines, "\n")+"\n", string(r.Body), "oldest first, one line each")
		require.Empty(t, r.Header.Get("X-Next-Cursor"), "one page")

		// Pages of two, newest page first, each oldest first inside.
		var pages []string
		query := "?format=transcript&limit=2"
		for range 4 {
			r := b.get(path + query)
			require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
			pages = append(pages, string(r.Body))
			next := r.Header.Get("X-Next-Cursor")
			if next == "" {
				break
			}
			// The header's cursor is the JSON page's next_cursor.
			_, jsonNext := b.historyPage(t, th.ID, strings.Replace(query, "format=transcript", "format=json", 1))
			require.Equal(t, jsonNext, next)
			query = "?format=transcript&limit=2&before=" + next
		}
		require.Equal(t, []string{
			lines[3] + "\n" + lines[4] + "\n",
			lines[1] + "\n" + lines[2] + "\n",
			lines[0] + "\n",
		}, pages)

		requireInvalid(t, b.get(path+"?format=transcript&before=nonsense"), "query", "before")
		empty := b.group(t, "whatsapp", agentA, "Quiet", userA)
		r = b.get("/v1/messages/threads/" + b.account + "/get-messages/" + empty + "?format=transcript")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Empty(t, r.Body, "a thread without messages")
	})
}

func TestSendPreconditions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		group := b.group(t, "whatsapp", agentA, "Team", userA)
		ind := "/v1/messages/individual/" + b.account + "/send"
		grp := "/v1/messages/group/" + b.account + "/send"
		uni := "/v1/send/" + b.account
		before := b.counts(t)

		individual := func(from, to, service string) map[string]any {
			return map[string]any{"from": from, "to": to, "service": service, "content": "hello"}
		}
		// The user has not written to this agent number on this service.
		requireError(t, b.post(ind, individual(agentA, userB, "whatsapp")), 409, "conversation_not_started")
		requireError(t, b.post(ind, individual(agentB, userA, "whatsapp")), 409, "conversation_not_started")
		requireError(t, b.post(ind, individual(agentTG, userA, "telegram")), 409, "conversation_not_started")
		requireError(t, b.post(uni, map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userB, "content": map[string]any{"text": "x"}}), 409, "conversation_not_started")

		// The from number is not an enabled number of this account on
		// that service.
		for _, from := range []struct{ number, service string }{
			{agentOther, "whatsapp"}, {agentDisabled, "whatsapp"}, {agentA, "telegram"}, {"+14155550177", "whatsapp"},
		} {
			requireError(t, b.post(ind, individual(from.number, userA, from.service)), 403, "number_not_permitted")
			requireError(t, b.post(uni, map[string]any{"from": from.number, "service": from.service, "type": "individual", "to": userA, "content": map[string]any{"text": "x"}}), 403, "number_not_permitted")
			if from.service == "whatsapp" {
				requireError(t, b.post(grp, map[string]any{"from": from.number, "thread_id": group, "content": "x"}), 403, "number_not_permitted")
			}
		}

		// agentB is an enabled number of the account, but not in the group.
		requireError(t, b.post(grp, map[string]any{"from": agentB, "thread_id": group, "content": "x"}), 409, "not_group_member")
		requireError(t, b.post("/v1/group/"+b.account+"/send", map[string]any{"from": agentB, "thread_id": group, "message": "x"}), 409, "not_group_member")
		requireError(t, b.post(uni, map[string]any{"from": agentB, "type": "group", "thread_id": group, "content": map[string]any{"text": "x"}}), 409, "not_group_member")

		require.Equal(t, before, b.counts(t), "refused sends store nothing")
		require.Len(t, b.recent(t, thread), 1)
		require.Empty(t, b.recent(t, group))
	})
}

// badInput is a request that must be refused with 422 at loc.
type badInput struct {
	name string
	body any // a map edited from the valid body, or raw JSON
	loc  []any
}

func TestSendBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		group := b.group(t, "whatsapp", agentA, "Team", userA)
		img := b.media.URL + "/image.png"
		tooLong := strings.Repeat("x", 4097)

		ind := map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "hello"}
		media := map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "message_type": "media", "media_url": img, "media_type": "image"}
		individual := []badInput{
			{"no from", edit(ind, "from", nil), []any{"body", "from"}},
			{"no to", edit(ind, "to", nil), []any{"body", "to"}},
			{"no service", edit(ind, "service", nil), []any{"body", "service"}},
			{"no text", edit(ind, "content", nil), []any{"body", "content"}},
			{"null text", `{"from": "+14155550100", "to": "+14155550111", "service": "whatsapp", "content": null}`, []any{"body", "content"}},
			{"media without url", edit(media, "media_url", nil), []any{"body", "media_url"}},
			{"media without type", edit(media, "media_type", nil), []any{"body", "media_type"}},
			{"from not a string", edit(ind, "from", 14155550100), []any{"body", "from"}},
			{"to not a string", edit(ind, "to", true), []any{"body", "to"}},
			{"content not a string", edit(ind, "content", []string{"hello"}), []any{"body", "content"}},
			{"message not a string", edit(ind, "content", nil, "message", map[string]any{"text": "x"}), []any{"body", "message"}},
			{"unknown field", edit(ind, "priority", "high"), []any{"body", "priority"}},
			{"sender_name", edit(ind, "sender_name", "Bot"), []any{"body", "sender_name"}},
			{"thread_id on an individual send", edit(ind, "thread_id", thread), []any{"body", "thread_id"}},
			{"unknown service", edit(ind, "service", "sms"), []any{"body", "service"}},
			{"service in capitals", edit(ind, "service", "WhatsApp"), []any{"body", "service"}},
			{"unknown media_type", edit(media, "media_type", "gif"), []any{"body", "media_type"}},
			{"unknown message_type", edit(ind, "message_type", "sticker"), []any{"body", "message_type"}},
			{"from not E.164", edit(ind, "from", "4155550100"), []any{"body", "from"}},
			{"to not E.164", edit(ind, "to", "+0415555"), []any{"body", "to"}},
			{"@username on WhatsApp", edit(ind, "to", "@ada_lovelace"), []any{"body", "to"}},
			{"empty text", edit(ind, "content", ""), []any{"body", "content"}},
			{"blank text", edit(ind, "content", " \n\t"), []any{"body", "content"}},
			{"empty message", edit(ind, "content", nil, "message", ""), []any{"body", "message"}},
			{"text too long", edit(ind, "content", tooLong), []any{"body", "content"}},
			{"message too long", edit(ind, "content", nil, "message", tooLong), []any{"body", "message"}},
			{"caption too long", edit(media, "caption", strings.Repeat("c", 1025)), []any{"body", "caption"}},
			{"media_url not http", edit(media, "media_url", "ftp://cdn.example.com/a.png"), []any{"body", "media_url"}},
			{"media_url relative", edit(media, "media_url", "/a.png"), []any{"body", "media_url"}},
			{"malformed JSON", `{"from": "+14155550100",`, []any{"body"}},
			{"array body", `[]`, []any{"body"}},
			{"empty body", ``, []any{"body"}},
		}
		grpBody := map[string]any{"from": agentA, "thread_id": group, "content": "hello"}
		groupCases := []badInput{
			{"no from", edit(grpBody, "from", nil), []any{"body", "from"}},
			{"no thread_id", edit(grpBody, "thread_id", nil), []any{"body", "thread_id"}},
			{"empty thread_id", edit(grpBody, "thread_id", ""), []any{"body", "thread_id"}},
			{"no text", edit(grpBody, "content", nil), []any{"body", "content"}},
			{"to on a group send", edit(grpBody, "to", userA), []any{"body", "to"}},
			{"thread_id not a string", edit(grpBody, "thread_id", 7), []any{"body", "thread_id"}},
			{"unknown field", edit(grpBody, "mentions", []string{userA}), []any{"body", "mentions"}},
			{"unknown service", edit(grpBody, "service", "signal"), []any{"body", "service"}},
			{"another service than the thread's", edit(grpBody, "service", "telegram"), []any{"body", "service"}},
			{"an individual thread", edit(grpBody, "thread_id", thread), []any{"body", "thread_id"}},
			{"from not E.164", edit(grpBody, "from", "agent"), []any{"body", "from"}},
			{"empty text", edit(grpBody, "content", ""), []any{"body", "content"}},
			{"text too long", edit(grpBody, "content", tooLong), []any{"body", "content"}},
			{"unknown media_type", edit(grpBody, "content", nil, "message_type", "media", "media_url", img, "media_type", "sticker"), []any{"body", "media_type"}},
			{"unknown message_type", edit(grpBody, "message_type", "poll"), []any{"body", "message_type"}},
		}
		uniInd := map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userA, "content": map[string]any{"type": "text", "text": "hello"}}
		uniGrp := map[string]any{"from": agentA, "type": "group", "thread_id": group, "content": map[string]any{"type": "text", "text": "hello"}}
		mediaContent := map[string]any{"type": "media", "media_url": img, "media_type": "image"}
		location := map[string]any{"type": "location", "latitude": 52.37, "longitude": 4.89}
		universal := []badInput{
			{"no from", edit(uniInd, "from", nil), []any{"body", "from"}},
			{"no type", edit(uniInd, "type", nil), []any{"body", "type"}},
			{"no content", edit(uniInd, "content", nil), []any{"body", "content"}},
			{"individual without to", edit(uniInd, "to", nil), []any{"body", "to"}},
			{"individual without service", edit(uniInd, "service", nil), []any{"body", "service"}},
			{"group without thread_id", edit(uniGrp, "thread_id", nil), []any{"body", "thread_id"}},
			{"to and thread_id", edit(uniInd, "thread_id", group), []any{"body", "thread_id"}},
			{"group with to too", edit(uniGrp, "to", userA), []any{"body", "thread_id"}},
			{"unknown type", edit(uniInd, "type", "broadcast"), []any{"body", "type"}},
			{"type not a string", edit(uniInd, "type", 1), []any{"body", "type"}},
			{"content not an object", edit(uniInd, "content", "hello"), []any{"body", "content"}},
			{"unknown content.type", edit(uniInd, "content", map[string]any{"type": "sticker"}), []any{"body", "content", "type"}},
			{"content without text", edit(uniInd, "content", map[string]any{"type": "text"}), []any{"body", "content", "text"}},
			{"empty text", edit(uniInd, "content", map[string]any{"text": ""}), []any{"body", "content", "text"}},
			{"text too long", edit(uniGrp, "content", map[string]any{"text": tooLong}), []any{"body", "content", "text"}},
			{"media without url", edit(uniInd, "content", edit(mediaContent, "media_url", nil)), []any{"body", "content", "media_url"}},
			{"media without type", edit(uniInd, "content", edit(mediaContent, "media_type", nil)), []any{"body", "content", "media_type"}},
			{"location without latitude", edit(uniInd, "content", edit(location, "latitude", nil)), []any{"body", "content", "latitude"}},
			{"location without longitude", edit(uniGrp, "content", edit(location, "longitude", nil)), []any{"body", "content", "longitude"}},
			{"latitude not a number", edit(uniInd, "content", edit(location, "latitude", "north")), []any{"body", "content", "latitude"}},
			{"unknown field", edit(uniInd, "priority", 1), []any{"body", "priority"}},
			{"unknown service", edit(uniInd, "service", "sms"), []any{"body", "service"}},
			{"from not E.164", edit(uniInd, "from", "+1"), []any{"body", "from"}},
			{"to not E.164", edit(uniInd, "to", "ada"), []any{"body", "to"}},
			{"unknown content media_type", edit(uniInd, "content", edit(mediaContent, "media_type", "gif")), []any{"body", "content", "media_type"}},
			{"latitude out of range", edit(uniInd, "content", edit(location, "latitude", 91)), []any{"body", "content", "latitude"}},
			{"unknown field in content", edit(uniInd, "content", map[string]any{"text": "x", "bold": true}), []any{"body", "content", "bold"}},
		}

		before := b.counts(t)
		check := func(path string, cases []badInput) {
			t.Helper()
			for _, c := range cases {
				r := b.post(path, c.body)
				require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s %s: %s", path, c.name, r.Body)
				requireInvalid(t, r, c.loc...)
			}
		}
		check("/v1/messages/individual/"+b.account+"/send", individual)
		check("/v1/individual/"+b.account+"/send", individual)
		check("/v1/messages/group/"+b.account+"/send", groupCases)
		check("/v1/group/"+b.account+"/send", groupCases)
		check("/v1/send/"+b.account, universal)

		// Bodies that are not JSON, or too large.
		ind2 := "/v1/messages/individual/" + b.account + "/send"
		requireError(t, b.client.Do(http.MethodPost, ind2, `{"from":"+14155550100"}`, b.auth("Content-Type", "text/plain")...), 415, "unsupported_media_type")
		requireError(t, b.post(ind2, edit(ind, "content", strings.Repeat("x", 2<<20))), 413, "payload_too_large")

		require.Equal(t, before, b.counts(t), "refused sends store nothing")
		require.Len(t, b.recent(t, thread), 1)
		require.Empty(t, b.recent(t, group))
	})
}

func TestMediaURLMustBePublic(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		dialer := &recordingDialer{}
		resolver := &flipResolver{}
		guard := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: dialer})
		b := setupMessaging(t, dialect, msgOptions{guard: guard})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		group := b.group(t, "whatsapp", agentA, "Team", userA)
		before := b.counts(t)

		for _, url := range []string{
			b.media.URL + "/image.png", // 127.0.0.1, where the test server is
			"http://10.0.0.1/image.png",
			"http://localhost/image.png",
			"http://[::1]/image.png",
			"http://169.254.169.254/latest/meta-data",
			"http://2130706433/image.png",
		} {
			for _, c := range []struct {
				path string
				body map[string]any
				loc  []any
			}{
				{"/v1/messages/individual/" + b.account + "/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "message_type": "media", "media_url": url, "media_type": "image"}, []any{"body", "media_url"}},
				{"/v1/group/" + b.account + "/send", map[string]any{"from": agentA, "thread_id": group, "message_type": "media", "media_url": url, "media_type": "image"}, []any{"body", "media_url"}},
				{"/v1/send/" + b.account, map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userA, "content": map[string]any{"type": "media", "media_url": url, "media_type": "image"}}, []any{"body", "content", "media_url"}},
				{"/v1/individual/" + b.account + "/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "see", "attachment_uri": url}, []any{"body", "attachment_uri"}},
			} {
				item := requireInvalid(t, b.post(c.path, c.body), c.loc...)
				require.Equal(t, "url_forbidden", item["type"], "%s %s", c.path, url)
			}
		}
		require.Empty(t, dialer.seen(), "no forbidden address was ever dialled")
		require.Equal(t, before, b.counts(t), "refused sends store nothing")
		require.Len(t, b.recent(t, thread), 1)

		// A name that does not resolve yet is accepted, and checked again
		// when the file is fetched: it now resolves to a private address,
		// so the fetch is refused without a connection, and the message
		// fails at once (retrying cannot make the address public).
		r := b.post("/v1/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp",
			"message_type": "media", "media_url": "http://media.rebind.example/image.png", "media_type": "image"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		resolver.flip()
		id := r.JSON(t)["message_id"].(string)
		require.Eventually(t, func() bool {
			var status, code string
			require.NoError(t, b.db.Bun().NewRaw("SELECT status, failure_code FROM messages WHERE id = ?", id).Scan(context.Background(), &status, &code))
			return status == "failed" && code == "media_forbidden"
		}, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, "failed", b.details(t, id)["status"], "not delivered")
		require.Empty(t, dialer.seen(), "no forbidden address was ever dialled")
	})
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		mine := b.inbound(t, "whatsapp", userA, agentA, "hi")

		// The other account has a thread, a message and a group of its own.
		r := b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/inbound", map[string]any{"service": "whatsapp", "from": userB, "to": agentOther, "content": "hi"}, b.otherAuth()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		theirThread, theirMessage := r.JSON(t)["thread_id"].(string), r.JSON(t)["message_id"].(string)
		r = b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/groups", map[string]any{"service": "whatsapp", "agent_number": agentOther, "title": "Theirs", "participants": []string{userA}}, b.otherAuth()...)
		require.Equal(t, http.StatusCreated, r.StatusCode, "body: %s", r.Body)
		theirGroup := r.JSON(t)["data"].(map[string]any)["thread_id"].(string)

		missingThread := "thr_" + strings.Repeat("a", 26)
		missingMessage := "msg_" + strings.Repeat("a", 26)
		sameAsMissing := func(path func(id string) string, theirs, missing string) {
			t.Helper()
			got := b.get(path(theirs))
			want := b.get(path(missing))
			requireError(t, got, 404, "not_found")
			require.Equal(t, string(want.Body), string(got.Body), "another account's id answers like a missing one")
		}
		details := func(id string) string { return "/v1/messages/individual/" + b.account + "/get-details/" + id }
		threadDetails := func(id string) string { return "/v1/messages/threads/" + b.account + "/get-details/" + id }
		recent := func(id string) string { return "/v1/messages/threads/" + b.account + "/get-recent/" + id }
		sameAsMissing(details, theirMessage, missingMessage)
		sameAsMissing(threadDetails, theirThread, missingThread)
		sameAsMissing(threadDetails, theirGroup, missingThread)
		sameAsMissing(recent, theirThread, missingThread)

		before := b.counts(t)
		for _, path := range []string{"/v1/messages/group/" + b.account + "/send", "/v1/group/" + b.account + "/send"} {
			got := b.post(path, map[string]any{"from": agentA, "thread_id": theirGroup, "content": "x"})
			want := b.post(path, map[string]any{"from": agentA, "thread_id": missingThread, "content": "x"})
			requireError(t, got, 404, "not_found")
			require.Equal(t, string(want.Body), string(got.Body))
		}
		got := b.post("/v1/send/"+b.account, map[string]any{"from": agentA, "type": "group", "thread_id": theirGroup, "content": map[string]any{"text": "x"}})
		requireError(t, got, 404, "not_found")
		require.Equal(t, before, b.counts(t))

		// Lists never show the other account's threads.
		r = b.get("/v1/messages/threads/" + b.account + "/get-all")
		require.EqualValues(t, 1, r.JSON(t)["total_count"])
		r = b.get("/v1/messages/threads/" + b.account + "/get-all/" + userB)
		require.EqualValues(t, 0, r.JSON(t)["total_count"])
		r = b.get("/v1/messages/threads/" + b.account + "/get-all/" + agentOther)
		require.EqualValues(t, 0, r.JSON(t)["total_count"])

		// Malformed ids are missing ones.
		for _, id := range []string{"nope", "thr_", "THR_" + strings.Repeat("a", 26), "thr_" + strings.Repeat("A", 26), "thr_" + strings.Repeat("a", 65), "msg_" + strings.Repeat("a", 26), "%20"} {
			requireError(t, b.get(threadDetails(id)), 404, "not_found")
			requireError(t, b.get(recent(id)), 404, "not_found")
		}
		for _, id := range []string{"nope", "msg_", "msg_" + strings.Repeat("!", 3), mine} {
			requireError(t, b.get(details(id)), 404, "not_found")
		}

		// Credentials of the other account on this account's paths: 403.
		msgID := b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "x"}).JSON(t)["message_id"].(string)
		for _, req := range []struct{ method, path string }{
			{http.MethodPost, "/v1/messages/individual/" + b.account + "/send"},
			{http.MethodPost, "/v1/individual/" + b.account + "/send"},
			{http.MethodPost, "/v1/messages/group/" + b.account + "/send"},
			{http.MethodPost, "/v1/group/" + b.account + "/send"},
			{http.MethodPost, "/v1/send/" + b.account},
			{http.MethodPost, "/v1/sandbox/" + b.account + "/inbound"},
			{http.MethodPost, "/v1/sandbox/" + b.account + "/groups"},
			{http.MethodGet, details(msgID)},
			{http.MethodGet, threadDetails(mine)},
			{http.MethodGet, "/v1/messages/threads/" + b.account + "/get-all"},
			{http.MethodGet, "/v1/messages/threads/" + b.account + "/get-all/" + userA},
			{http.MethodGet, recent(mine)},
		} {
			var body any
			if req.method == http.MethodPost {
				body = map[string]any{"from": agentOther, "to": userA, "service": "whatsapp", "content": "x"}
			}
			requireError(t, b.client.Do(req.method, req.path, body, b.otherAuth()...), 403, "account_mismatch")
			requireError(t, b.client.Do(req.method, req.path, body), 401, "unauthorized")
		}
	})
}

func TestDeliveryFailures(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		send := "/v1/messages/individual/" + b.account + "/send"
		b.inbound(t, "whatsapp", userA, agentA, "hi")
		for _, user := range []string{sandbox.UnreachableNumber, sandbox.DownNumber} {
			b.inbound(t, "whatsapp", user, agentA, "hi")
		}
		queue := func(body map[string]any) string {
			t.Helper()
			r := b.post(send, body)
			require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
			require.Equal(t, "queued", r.JSON(t)["status"])
			return r.JSON(t)["message_id"].(string)
		}
		media := func(file, kind string) string {
			return queue(map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "message_type": "media", "media_url": b.media.URL + file, "media_type": kind})
		}
		unreachable := queue(map[string]any{"from": agentA, "to": sandbox.UnreachableNumber, "service": "whatsapp", "content": "anyone?"})
		down := queue(map[string]any{"from": agentA, "to": sandbox.DownNumber, "service": "whatsapp", "content": "anyone?"})
		failures := map[string]string{
			unreachable:                         "recipient_unreachable",
			media("/big.png", "image"):          "media_too_large",
			media("/declared-big.png", "image"): "media_too_large",
			media("/notes.png", "image"):        "unsupported_media_type",
			media("/missing.png", "image"):      "media_unreachable",
			media("/report.pdf", "image"):       "unsupported_media_type",
			media("/image.png", "audio"):        "unsupported_media_type",
		}
		for id, code := range failures {
			data := b.waitStatus(t, id, "failed")
			require.Equal(t, code, data["error_code"], id)
			require.NotEmpty(t, data["error_message"], id)
		}
		// A document may be any common type, and the same PNG is fine as
		// an image.
		b.waitStatus(t, media("/report.pdf", "document"), "delivered")
		b.waitStatus(t, media("/image.png", "image"), "delivered")

		// A channel that is down is retried: the message stays queued.
		require.Eventually(t, func() bool {
			state, attempt := b.job(t, down)
			return state == "retryable" && attempt >= 1
		}, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, "queued", b.details(t, down)["status"])
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		thread := b.inbound(t, "whatsapp", userA, agentA, "hi")
		send := "/v1/messages/individual/" + b.account + "/send"
		body := map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "exactly once"}
		before := b.counts(t)

		first := b.post(send, body, "Idempotency-Key", "order-1")
		require.Equal(t, http.StatusOK, first.StatusCode, "body: %s", first.Body)
		require.Empty(t, first.Header.Get("Idempotent-Replayed"))
		again := b.post(send, body, "Idempotency-Key", "order-1")
		require.Equal(t, http.StatusOK, again.StatusCode, "body: %s", again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(first.Body), string(again.Body))
		require.Equal(t, counts{before.messages + 1, before.jobs + 1}, b.counts(t), "one message, one delivery")
		require.Len(t, b.recent(t, thread), 2)

		// The same key with another body, or on another path, is refused.
		requireError(t, b.post(send, edit(body, "content", "something else"), "Idempotency-Key", "order-1"), 409, "idempotency_key_reused")
		requireError(t, b.post("/v1/individual/"+b.account+"/send", body, "Idempotency-Key", "order-1"), 409, "idempotency_key_reused")
		require.Len(t, b.recent(t, thread), 2)

		// Keys are per account: the other account's order-1 is its own.
		r := b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentOther, "content": "hi"}, b.otherAuth("Idempotency-Key", "order-1")...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		r = b.client.Do(http.MethodPost, "/v1/messages/individual/"+b.other+"/send", edit(body, "from", agentOther), b.otherAuth("Idempotency-Key", "order-2")...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		ours := b.post(send, body, "Idempotency-Key", "order-2")
		require.Equal(t, http.StatusOK, ours.StatusCode, "body: %s", ours.Body)
		require.Empty(t, ours.Header.Get("Idempotent-Replayed"))
		require.NotEqual(t, r.JSON(t)["message_id"], ours.JSON(t)["message_id"])

		// Every POST route replays.
		group := b.group(t, "whatsapp", agentA, "Team", userA)
		for _, req := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/group/" + b.account + "/send", map[string]any{"from": agentA, "thread_id": group, "content": "hi team"}},
			{"/v1/send/" + b.account, map[string]any{"from": agentA, "type": "group", "thread_id": group, "content": map[string]any{"type": "location", "latitude": 1.5, "longitude": 2.5}}},
			{"/v1/sandbox/" + b.account + "/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": "once"}},
			{"/v1/sandbox/" + b.account + "/groups", map[string]any{"service": "whatsapp", "agent_number": agentA, "title": "Once", "participants": []string{userB}}},
		} {
			before := b.counts(t)
			first := b.post(req.path, req.body, "Idempotency-Key", "route-"+req.path)
			require.Less(t, first.StatusCode, 300, "%s: %s", req.path, first.Body)
			again := b.post(req.path, req.body, "Idempotency-Key", "route-"+req.path)
			require.Equal(t, first.StatusCode, again.StatusCode)
			require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
			require.Equal(t, string(first.Body), string(again.Body))
			after := b.counts(t)
			require.LessOrEqual(t, after.messages-before.messages, 1, req.path)
		}
		r = b.get("/v1/messages/threads/" + b.account + "/get-all/" + userB)
		require.EqualValues(t, 1, r.JSON(t)["total_count"], "the group was created once")

		// Refusals are kept and replayed too.
		refused := map[string]any{"from": agentA, "to": userB, "service": "whatsapp", "content": "hi"}
		requireError(t, b.post(send, refused, "Idempotency-Key", "refused"), 409, "conversation_not_started")
		r = b.post(send, refused, "Idempotency-Key", "refused")
		requireError(t, r, 409, "conversation_not_started")
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))

		requireInvalid(t, b.post(send, body, "Idempotency-Key", strings.Repeat("k", 256)), "header", "Idempotency-Key")
	})
}

func TestConcurrentIdempotentRequests(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		if dialect == store.Postgres {
		}
		b := setupMessaging(t, dialect, msgOptions{})
		b.inbound(t, "whatsapp", userA, agentA, "hi")
		before := b.counts(t)
		body := map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "once"}
		const n = 8
		results := make([]openapitest.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = b.post("/v1/messages/individual/"+b.account+"/send", body, "Idempotency-Key", "race")
			}()
		}
		wg.Wait()
		var ok []string
		for _, r := range results {
			if r.StatusCode == http.StatusOK {
				ok = append(ok, string(r.Body))
				continue
			}
			requireError(t, r, 409, "idempotency_key_in_use")
		}
		require.NotEmpty(t, ok)
		for _, body := range ok {
			require.Equal(t, ok[0], body, "every success is the same response")
		}
		require.Equal(t, before.messages+1, b.counts(t).messages)
	})
}

func TestConcurrentFirstInboundMessages(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		if dialect == store.Postgres {
		}
		b := setupMessaging(t, dialect, msgOptions{})
		const n = 6
		results := make([]openapitest.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = b.post("/v1/sandbox/"+b.account+"/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": fmt.Sprint("burst ", i)})
			}()
		}
		wg.Wait()
		threads := map[any]bool{}
		for _, r := range results {
			require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
			threads[r.JSON(t)["thread_id"]] = true
		}
		require.Len(t, threads, 1, "one thread")
		require.Equal(t, n, b.counts(t).messages, "every message stored")
	})
}

func TestMediaTypeMustBeAMediaKind(t *testing.T) {
	t.Parallel()
	b := setupMessaging(t, store.SQLite, msgOptions{})
	b.inbound(t, "whatsapp", userA, agentA, "hi")
	url := b.media.URL + "/image.png"
	for _, kind := range []string{"location", "text"} {
		requireInvalid(t, b.post("/v1/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "message_type": "media", "media_url": url, "media_type": kind}), "body", "media_type")
		requireInvalid(t, b.post("/v1/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "x", "attachment_uri": url, "media_type": kind}), "body", "media_type")
		requireInvalid(t, b.post("/v1/send/"+b.account, map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userA, "content": map[string]any{"type": "media", "media_url": url, "media_type": kind}}), "body", "content", "media_type")
	}
}

func TestValidationErrorsNameTheFieldSent(t *testing.T) {
	t.Parallel()
	b := setupMessaging(t, store.SQLite, msgOptions{})
	b.inbound(t, "whatsapp", userA, agentA, "hi")
	uni := map[string]any{"from": agentA, "service": "whatsapp", "type": "individual", "to": userA}
	requireInvalid(t, b.post("/v1/send/"+b.account, edit(uni, "content", map[string]any{"type": "media", "media_url": "https://cdn.example.com/a.png", "media_type": "gif"})), "body", "content", "media_type")
	requireInvalid(t, b.post("/v1/send/"+b.account, edit(uni, "content", map[string]any{"type": "media", "media_url": "ftp://cdn.example.com/a.png", "media_type": "image"})), "body", "content", "media_url")
	requireInvalid(t, b.post("/v1/send/"+b.account, edit(uni, "content", map[string]any{"type": "location", "latitude": 91, "longitude": 0})), "body", "content", "latitude")
	requireInvalid(t, b.post("/v1/send/"+b.account, edit(uni, "content", map[string]any{"text": "x", "bogus": true})), "body", "content", "bogus")
	requireInvalid(t, b.post("/v1/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": userA, "service": "whatsapp", "content": "x", "attachment_uri": "ftp://cdn.example.com/a.pdf"}), "body", "attachment_uri")
	requireInvalid(t, b.post("/v1/sandbox/"+b.account+"/inbound", map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "content": ""}), "body", "content")
}

// The media form must not silently drop media fields.
func TestMediaFieldsAreNotIgnored(t *testing.T) {
	t.Parallel()
	b := setupMessaging(t, store.SQLite, msgOptions{})
	b.inbound(t, "whatsapp", userA, agentA, "hi")
	url := b.media.URL + "/image.png"
	for _, body := range []map[string]any{
		{"from": agentA, "to": userA, "service": "whatsapp", "content": "look", "media_url": url, "media_type": "image"},
		{"from": agentA, "to": userA, "service": "whatsapp", "message_type": "text", "content": "look", "media_url": url},
	} {
		r := b.post("/v1/individual/"+b.account+"/send", body)
		if r.StatusCode == http.StatusOK {
			require.Equal(t, "image", b.details(t, r.JSON(t)["message_id"].(string))["message_type"], "sent as media")
			continue
		}
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "body: %s", r.Body)
	}
}
