package rest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/event"
)

// The sandbox delivers an email to an address of the account through the
// path received email takes: an answer to a sent email (in_reply_to its
// id) is written as a mail client writes one, lands in its thread with its
// reply extracted and its attachment stored, says it was simulated, and
// is an email.received event; a whole message given as raw is received
// as it is. Another account's address or email is 404; bad input is 422
// naming the field.
func TestSandboxInboundEmail(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		mailbox := b.createAddress(t, "support.bot", serviceDomain)
		r := b.client.Do(http.MethodPost, "/v1/emails/"+b.other+"/create-email", map[string]any{"address": "theirs", "domain_name": otherDomain}, b.otherAuth()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		sentID := b.send(t, map[string]any{"sender_address": mailbox, "recipient_address": "ann@example.org", "subject": "Your report", "body": "Here it is."})
		sent := b.waitEmail(t, sentID)
		path := "/v1/sandbox/" + b.account + "/inbound-email"

		r = b.post(path, map[string]any{
			"from": "Ann Example <ann@example.org>", "to": "Support.Bot@" + serviceDomain, "subject": "Re: Your report",
			"text": "Thanks!\n\nOn Tue, Nov 24, 2026 at 9:15 AM <" + mailbox + "> wrote:\n> Here it is.", "in_reply_to": sentID,
			"attachment": map[string]any{"name": "signed.pdf", "content_type": "application/pdf", "data": base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n"))},
		})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		out := r.JSON(t)
		require.Equal(t, sent["thread_id"], out["thread_id"], "the answer lands in the sent email's thread")
		id := out["email_id"].(string)
		r = b.get("/v1/emails/" + b.account + "/messages/" + id)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		d := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "inbound", d["direction"])
		require.Equal(t, "received", d["status"])
		require.Equal(t, "Thanks!", d["extracted_text"])
		require.Equal(t, "Ann Example", d["sender_name"])
		require.Equal(t, sent["message_id"], d["in_reply_to"])
		require.Equal(t, map[string]any{"spf": "none", "dkim": "none", "dmarc": "none", "reason": "simulated through the sandbox: nothing was checked"}, d["authentication"])
		atts := d["attachments"].([]any)
		require.Len(t, atts, 1)
		att := atts[0].(map[string]any)
		r = b.get("/v1/emails/" + b.account + "/messages/" + id + "/attachments/" + att["id"].(string))
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.Equal(t, "%PDF-1.4\n", string(r.Body))

		evs, err := b.db.WebhookStore().EventsAfter(context.Background(), b.account, "", 20)
		require.NoError(t, err)
		var received []map[string]any
		for _, e := range evs {
			if e.Type == event.EmailReceived {
				var p map[string]any
				require.NoError(t, json.Unmarshal(e.Payload, &p))
				received = append(received, p)
			}
		}
		require.Len(t, received, 1)
		require.Equal(t, id, received[0]["email_id"])
		require.Equal(t, "Thanks!", received[0]["extracted_text"])

		raw := "From: bob@example.net\r\nTo: " + mailbox + "\r\nSubject: Hello\r\nMessage-ID: <raw-1@example.net>\r\n\r\nHi there\r\n"
		r = b.post(path, map[string]any{"to": mailbox, "raw": raw})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "<raw-1@example.net>", r.JSON(t)["message_id"])
		require.NotEqual(t, sent["thread_id"], r.JSON(t)["thread_id"], "a new conversation")
		r = b.get("/v1/emails/" + b.account + "/messages/" + r.JSON(t)["email_id"].(string) + "/raw")
		require.Equal(t, raw, string(r.Body), "kept as given")

		// Another account's address and email are not found.
		requireStatus(t, b.post(path, map[string]any{"from": "ann@example.org", "to": "theirs@" + otherDomain, "text": "hi"}), http.StatusNotFound, "not_found")
		requireStatus(t, b.post(path, map[string]any{"from": "ann@example.org", "to": "nobody@" + serviceDomain, "text": "hi"}), http.StatusNotFound, "not_found")
		theirs := b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/inbound-email", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi"}, b.otherAuth()...)
		requireStatus(t, theirs, http.StatusNotFound, "not_found")
		requireStatus(t, b.post(path, map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "in_reply_to": "eml_nosuchemail"}), http.StatusNotFound, "not_found")
		requireStatus(t, b.post("/v1/sandbox/"+b.other+"/inbound-email", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi"}), http.StatusForbidden, "account_mismatch")

		for _, c := range []struct {
			name string
			body map[string]any
			typ  string
			loc  []any
		}{
			{"missing to", map[string]any{"from": "ann@example.org", "text": "hi"}, "missing", []any{"body", "to"}},
			{"missing from", map[string]any{"to": mailbox, "text": "hi"}, "missing", []any{"body", "from"}},
			{"no text or html", map[string]any{"from": "ann@example.org", "to": mailbox, "subject": "s"}, "missing", []any{"body", "text"}},
			{"bad from", map[string]any{"from": "ann", "to": mailbox, "text": "hi"}, "value_error", []any{"body", "from"}},
			{"bad to", map[string]any{"from": "ann@example.org", "to": "support", "text": "hi"}, "value_error", []any{"body", "to"}},
			{"subject injection", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "subject": "a\r\nBcc: x@example.com"}, "header_injection", []any{"body", "subject"}},
			{"bad in_reply_to", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "in_reply_to": "yesterday's"}, "value_error", []any{"body", "in_reply_to"}},
			{"raw with parts", map[string]any{"to": mailbox, "raw": raw, "text": "hi"}, "extra_forbidden", []any{"body", "text"}},
			{"empty raw", map[string]any{"to": mailbox, "raw": ""}, "string_too_short", []any{"body", "raw"}},
			{"attachment not base64", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "attachment": map[string]any{"name": "a.txt", "data": "%%%"}}, "value_error", []any{"body", "attachment", "data"}},
			{"attachment without name", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "attachment": map[string]any{"data": "aGk="}}, "missing", []any{"body", "attachment", "name"}},
			{"unknown field", map[string]any{"from": "ann@example.org", "to": mailbox, "text": "hi", "cc": "x@example.org"}, "extra_forbidden", []any{"body", "cc"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				item := requireInvalid(t, b.post(path, c.body), c.loc...)
				require.Equal(t, c.typ, item["type"], "item: %v", item)
			})
		}
	})
}
