package rest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

func TestCreateEmailAddress(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		path := "/v1/emails/" + b.account + "/create-email"

		r := b.post(path, map[string]any{"address": "Support.Bot", "domain_name": "MAIL.Switchboard.test"})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		out := r.JSON(t)
		require.Equal(t, "success", out["status"])
		require.Equal(t, "support.bot@"+serviceDomain, out["address"], "the local part is case-folded")
		require.True(t, strings.HasPrefix(out["email_id"].(string), "eml_"))

		require.Equal(t, "sales@"+acmeDomain, b.createAddress(t, "sales", acmeDomain), "a custom domain of the account")

		acc := b.get("/v1/accounts/" + b.account)
		require.Equal(t, http.StatusOK, acc.StatusCode)
		var listed []string
		for _, a := range acc.JSON(t)["data"].(map[string]any)["email_addresses"].([]any) {
			listed = append(listed, a.(map[string]any)["address"].(string))
		}
		require.ElementsMatch(t, []string{"support.bot@" + serviceDomain, "sales@" + acmeDomain}, listed)

		// Exists: on this account, and for another account on the service domain.
		requireStatus(t, b.post(path, map[string]any{"address": "support.bot", "domain_name": serviceDomain}), http.StatusConflict, "email_exists")
		r = b.client.Do(http.MethodPost, "/v1/emails/"+b.other+"/create-email", map[string]any{"address": "SUPPORT.BOT", "domain_name": serviceDomain}, b.otherAuth()...)
		requireStatus(t, r, http.StatusConflict, "email_exists")

		// Domains that are not the service's nor the account's.
		requireStatus(t, b.post(path, map[string]any{"address": "hello", "domain_name": otherDomain}), http.StatusForbidden, "domain_not_authorized")
		requireStatus(t, b.post(path, map[string]any{"address": "hello", "domain_name": "gmail.com"}), http.StatusForbidden, "domain_not_authorized")

		// Another account's path, and no credentials.
		requireStatus(t, b.post("/v1/emails/"+b.other+"/create-email", map[string]any{"address": "hello", "domain_name": serviceDomain}), http.StatusForbidden, "account_mismatch")
		r = b.client.Do(http.MethodPost, path, map[string]any{"address": "hello", "domain_name": serviceDomain})
		require.Equal(t, http.StatusUnauthorized, r.StatusCode)
	})
}

func TestCreateEmailAddressValidation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		path := "/v1/emails/" + b.account + "/create-email"
		valid := map[string]any{"address": "agent", "domain_name": serviceDomain}
		cases := []struct {
			name string
			body any
			typ  string
			loc  []any
		}{
			{"too short", edit(valid, "address", "abcd"), "string_too_short", []any{"body", "address"}},
			{"too long", edit(valid, "address", strings.Repeat("a", 31)), "string_too_long", []any{"body", "address"}},
			{"bad character", edit(valid, "address", "hello+tag"), "string_pattern_mismatch", []any{"body", "address"}},
			{"space", edit(valid, "address", "hel lo"), "string_pattern_mismatch", []any{"body", "address"}},
			{"leading dot", edit(valid, "address", ".hello"), "value_error", []any{"body", "address"}},
			{"trailing dot", edit(valid, "address", "hello."), "value_error", []any{"body", "address"}},
			{"double dot", edit(valid, "address", "hel..lo"), "value_error", []any{"body", "address"}},
			{"whole address", edit(valid, "address", "hello@"+serviceDomain), "string_pattern_mismatch", []any{"body", "address"}},
			{"missing address", edit(valid, "address", nil), "missing", []any{"body", "address"}},
			{"missing domain", edit(valid, "domain_name", nil), "missing", []any{"body", "domain_name"}},
			{"bad domain", edit(valid, "domain_name", "not a domain"), "value_error", []any{"body", "domain_name"}},
			{"wrong type", edit(valid, "address", 12345), "string_type", []any{"body", "address"}},
			{"unknown field", edit(valid, "display_name", "x"), "extra_forbidden", []any{"body", "display_name"}},
			{"not json", "not json", "json_invalid", []any{"body", 2}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := b.post(path, c.body)
				requireBadRequest(t, r, c.typ, c.loc...)
			})
		}
		acc := b.get("/v1/accounts/" + b.account).JSON(t)
		require.Empty(t, acc["data"].(map[string]any)["email_addresses"], "nothing was created")
	})
}

func TestCreateEmailAddressIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		path := "/v1/emails/" + b.account + "/create-email"
		body := map[string]any{"address": "agent", "domain_name": serviceDomain}
		first := b.post(path, body, "Idempotency-Key", "create-1")
		require.Equal(t, http.StatusOK, first.StatusCode, "body: %s", first.Body)
		again := b.post(path, body, "Idempotency-Key", "create-1")
		require.Equal(t, http.StatusOK, again.StatusCode, "a retry replays the answer, not a 409: %s", again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.JSONEq(t, string(first.Body), string(again.Body))
		requireStatus(t, b.post(path, edit(body, "address", "other"), "Idempotency-Key", "create-1"), http.StatusConflict, "idempotency_key_reused")
	})
}

func TestSendEmail(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		from := b.createAddress(t, "agent", serviceDomain)
		r := b.post("/v1/emails/"+b.account+"/send", map[string]any{
			"sender_address": "Agent@" + serviceDomain, "recipient_address": "user@example.org",
			"subject": "Your report", "body": "<p>Hello <b>there</b></p>",
			"headers": map[string]any{
				"cc": "cc1@example.org, cc2@example.org", "BCC": []any{"hidden@example.org"},
				"reply-to": "replies@example.com", "X-Campaign": "spring",
			},
			"attachment_uri": b.files.URL + "/report.pdf",
		})
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		out := r.JSON(t)
		require.Equal(t, "queued", out["status"])
		require.Equal(t, "user@example.org", out["recipient"])
		require.Equal(t, from, out["sender"])
		id := out["email_id"].(string)
		require.True(t, strings.HasPrefix(id, "eml_"))

		d := b.waitEmail(t, id)
		require.Equal(t, "sent", d["status"], "details: %v", d)
		require.Equal(t, sandbox.Reply, d["smtp_reply"])
		require.Equal(t, []any{"cc1@example.org", "cc2@example.org"}, d["cc"])
		require.Equal(t, []any{"hidden@example.org"}, d["bcc"])
		require.Equal(t, []any{"replies@example.com"}, d["reply_to"])
		require.Equal(t, map[string]any{"X-Campaign": "spring"}, d["headers"])
		require.Equal(t, true, d["html"])
		require.Equal(t, out["message_id"], d["message_id"])
		require.NotEmpty(t, d["date_sent"])
		require.EqualValues(t, 1, d["attempts"])

		sent := b.sent(t)
		require.Len(t, sent, 1)
		m := sent[0]
		require.Equal(t, from, m.From)
		require.Equal(t, "user@example.org", m.To)
		require.Equal(t, []string{"cc1@example.org", "cc2@example.org"}, m.Cc)
		require.Equal(t, []string{"hidden@example.org"}, m.Bcc)
		require.Equal(t, "<p>Hello <b>there</b></p>", m.HTML)
		require.Equal(t, "Hello there", m.Text, "the text alternative is generated")
		require.NotNil(t, m.Attachment)
		require.Equal(t, "report.pdf", m.Attachment.Name)
		require.Equal(t, "application/pdf", m.Attachment.ContentType)
		require.Equal(t, int64(len("%PDF-1.4\nreport\n")), m.Attachment.Size)
		sum := sha256.Sum256([]byte("%PDF-1.4\nreport\n"))
		require.Equal(t, hex.EncodeToString(sum[:]), m.Attachment.SHA256, "the attachment is kept as its hash, not its bytes")

		// A custom domain address sends too; plain text stays plain.
		b.createAddress(t, "sales", acmeDomain)
		id = b.send(t, map[string]any{"sender_address": "sales@" + acmeDomain, "recipient_address": "user@example.org", "subject": "Hi", "body": "Plain 2 < 3"})
		d = b.waitEmail(t, id)
		require.Equal(t, "sent", d["status"])
		require.Equal(t, false, d["html"])
	})
}

func TestSendEmailIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		b.createAddress(t, "agent", serviceDomain)
		path := "/v1/emails/" + b.account + "/send"
		body := map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "user@example.org", "subject": "Once", "body": "only once"}
		first := b.post(path, body, "Idempotency-Key", "send-1")
		require.Equal(t, http.StatusOK, first.StatusCode, "body: %s", first.Body)
		again := b.post(path, body, "Idempotency-Key", "send-1")
		require.Equal(t, http.StatusOK, again.StatusCode)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.JSON(t)["email_id"], again.JSON(t)["email_id"])
		requireStatus(t, b.post(path, edit(body, "subject", "Twice"), "Idempotency-Key", "send-1"), http.StatusConflict, "idempotency_key_reused")
		require.Equal(t, 1, b.emailCount(t), "one email is stored")
		b.waitEmail(t, first.JSON(t)["email_id"].(string))
		require.Len(t, b.sent(t), 1, "and sent once")
	})
}

func TestSendEmailValidation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		b.createAddress(t, "agent", serviceDomain)
		path := "/v1/emails/" + b.account + "/send"
		valid := map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "user@example.org", "subject": "Hello", "body": "Hi"}
		many := make([]any, 50)
		for i := range many {
			many[i] = "r" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + "@example.org"
		}
		cases := []struct {
			name string
			body any
			typ  string
			loc  []any
		}{
			{"missing sender", edit(valid, "sender_address", nil), "missing", []any{"body", "sender_address"}},
			{"missing recipient", edit(valid, "recipient_address", nil), "missing", []any{"body", "recipient_address"}},
			{"missing subject", edit(valid, "subject", nil), "missing", []any{"body", "subject"}},
			{"missing body", edit(valid, "body", nil), "missing", []any{"body", "body"}},
			{"bad sender", edit(valid, "sender_address", "agent"), "value_error", []any{"body", "sender_address"}},
			{"bad recipient", edit(valid, "recipient_address", "user@localhost"), "value_error", []any{"body", "recipient_address"}},
			{"recipient number", edit(valid, "recipient_address", 5), "string_type", []any{"body", "recipient_address"}},
			{"empty recipient list", edit(valid, "recipient_address", []any{}), "too_short", []any{"body", "recipient_address"}},
			{"bad recipient in a list", edit(valid, "recipient_address", []any{"ann@example.org", "nope"}), "value_error", []any{"body", "recipient_address", 1}},
			{"recipient list item not a string", edit(valid, "recipient_address", []any{"ann@example.org", 7}), "string_type", []any{"body", "recipient_address"}},
			{"two recipients in a list item", edit(valid, "recipient_address", []any{"a@example.org, b@example.org"}), "value_error", []any{"body", "recipient_address", 0}},
			{"recipient list injection", edit(valid, "recipient_address", []any{"a@example.org\r\nBcc: victim@example.com"}), "header_injection", []any{"body", "recipient_address", 0}},
			{"bad recipient in a comma list", edit(valid, "recipient_address", "ann@example.org, nope"), "value_error", []any{"body", "recipient_address"}},
			{"unclosed display name", edit(valid, "recipient_address", "\"Ann <ann@example.org>"), "value_error", []any{"body", "recipient_address"}},
			{"long display name", edit(valid, "recipient_address", strings.Repeat("n", 201)+" <ann@example.org>"), "value_error", []any{"body", "recipient_address"}},
			{"display name sender injection", edit(valid, "sender_address", "Boss\r\n <agent@"+serviceDomain+">"), "header_injection", []any{"body", "sender_address"}},
			{"too many to", edit(valid, "recipient_address", append(many, "last@example.org")), "value_error", []any{"body", "recipient_address"}},
			{"recipient injection", edit(valid, "recipient_address", "user@example.org\r\nBcc: victim@example.com"), "header_injection", []any{"body", "recipient_address"}},
			{"subject injection", edit(valid, "subject", "Hi\r\nBcc: victim@example.com"), "header_injection", []any{"body", "subject"}},
			{"subject line feed", edit(valid, "subject", "Hi\nthere"), "header_injection", []any{"body", "subject"}},
			{"empty subject", edit(valid, "subject", "  "), "string_too_short", []any{"body", "subject"}},
			{"long subject", edit(valid, "subject", strings.Repeat("s", 999)), "string_too_long", []any{"body", "subject"}},
			{"empty body", edit(valid, "body", ""), "string_too_short", []any{"body", "body"}},
			{"cc injection", edit(valid, "headers", map[string]any{"cc": "a@example.org\r\nBcc: victim@example.com"}), "header_injection", []any{"body", "headers", "cc"}},
			{"bcc list injection", edit(valid, "headers", map[string]any{"bcc": []any{"a@example.org", "b@example.org\n"}}), "header_injection", []any{"body", "headers", "bcc", 1}},
			{"header value injection", edit(valid, "headers", map[string]any{"X-Note": "a\r\nFrom: boss@example.com"}), "header_injection", []any{"body", "headers", "X-Note"}},
			{"bad cc", edit(valid, "headers", map[string]any{"cc": "not-an-address"}), "value_error", []any{"body", "headers", "cc"}},
			{"bad reply-to", edit(valid, "headers", map[string]any{"reply-to": []any{"x"}}), "value_error", []any{"body", "headers", "reply-to", 0}},
			{"unsafe header", edit(valid, "headers", map[string]any{"From": "boss@example.com"}), "value_error", []any{"body", "headers", "From"}},
			{"content header", edit(valid, "headers", map[string]any{"Content-Type": "text/html"}), "value_error", []any{"body", "headers", "Content-Type"}},
			{"header number", edit(valid, "headers", map[string]any{"X-Count": 3}), "string_type", []any{"body", "headers", "X-Count"}},
			{"headers not an object", edit(valid, "headers", "cc: a@example.org"), "dict_type", []any{"body", "headers"}},
			{"too many recipients", edit(valid, "headers", map[string]any{"cc": many}), "value_error", []any{"body", "headers"}},
			{"private attachment", edit(valid, "attachment_uri", "http://10.0.0.5/file.pdf"), "url_forbidden", []any{"body", "attachment_uri"}},
			{"metadata attachment", edit(valid, "attachment_uri", "http://169.254.169.254/latest/meta-data"), "url_forbidden", []any{"body", "attachment_uri"}},
			{"ftp attachment", edit(valid, "attachment_uri", "ftp://files.example.com/x"), "url_parsing", []any{"body", "attachment_uri"}},
			{"unknown field", edit(valid, "from", "x"), "extra_forbidden", []any{"body", "from"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				item := requireInvalid(t, b.post(path, c.body), c.loc...)
				require.Equal(t, c.typ, item["type"], "item: %v", item)
			})
		}
		require.Zero(t, b.emailCount(t), "nothing was stored")
	})
}

func TestSendEmailForbiddenAndLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		b.createAddress(t, "agent", serviceDomain)
		r := b.client.Do(http.MethodPost, "/v1/emails/"+b.other+"/create-email", map[string]any{"address": "theirs", "domain_name": otherDomain}, b.otherAuth()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		path := "/v1/emails/" + b.account + "/send"
		valid := map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "user@example.org", "subject": "Hello", "body": "Hi"}

		requireStatus(t, b.post(path, edit(valid, "sender_address", "theirs@"+otherDomain)), http.StatusForbidden, "sender_not_permitted")
		requireStatus(t, b.post(path, edit(valid, "sender_address", "nobody@"+serviceDomain)), http.StatusForbidden, "sender_not_permitted")
		requireStatus(t, b.post("/v1/emails/"+b.other+"/send", valid), http.StatusForbidden, "account_mismatch")
		r = b.client.Do(http.MethodPost, path, valid, "X-API-Key", b.key, "X-API-Secret", "wrong")
		require.Equal(t, http.StatusUnauthorized, r.StatusCode)

		big := edit(valid, "body", strings.Repeat("x", (1<<20)+1))
		requireStatus(t, b.post(path, big), http.StatusRequestEntityTooLarge, "payload_too_large")
		require.Zero(t, b.emailCount(t))

		// Reads are scoped: the other account's email is not found, and
		// so is a malformed id.
		id := b.send(t, valid)
		r = b.client.Do(http.MethodGet, "/v1/emails/"+b.other+"/messages/"+id, nil, b.otherAuth()...)
		requireStatus(t, r, http.StatusNotFound, "not_found")
		requireStatus(t, b.get("/v1/emails/"+b.account+"/messages/not-an-id"), http.StatusNotFound, "not_found")
		requireStatus(t, b.get("/v1/emails/"+b.other+"/messages/"+id), http.StatusForbidden, "account_mismatch")
	})
}

func TestSendEmailAttachmentFailures(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmail(t, dialect, emailOptions{})
		b.createAddress(t, "agent", serviceDomain)
		valid := map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "user@example.org", "subject": "Hello", "body": "Hi"}

		d := b.waitEmail(t, b.send(t, edit(valid, "attachment_uri", b.files.URL+"/huge.pdf")))
		require.Equal(t, "failed", d["status"])
		require.Equal(t, "attachment_too_large", d["error_code"])

		d = b.waitEmail(t, b.send(t, edit(valid, "attachment_uri", b.files.URL+"/gone.pdf")))
		require.Equal(t, "failed", d["status"])
		require.Equal(t, "attachment_unreachable", d["error_code"])
		require.Empty(t, b.sent(t), "nothing went out")
	})
}
