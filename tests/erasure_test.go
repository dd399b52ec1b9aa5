package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// scanColumns looks for each needle in every text, JSON and binary column
// of every table of the database (read from the catalog, so that a table
// added later is scanned too) and returns, per needle, the columns that
// hold it ("table.column").
func scanColumns(t *testing.T, dbURL string, needles ...string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	type column struct{ table, name, kind string }
	var columns []column
	if db.Dialect() == store.Postgres {
		var rows []struct {
			Table string `bun:"table_name"`
			Name  string `bun:"column_name"`
			Type  string `bun:"data_type"`
		}
		require.NoError(t, db.Bun().NewRaw(`SELECT table_name, column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() ORDER BY table_name, column_name`).Scan(ctx, &rows))
		for _, r := range rows {
			switch r.Type {
			case "text", "character varying", "character", "json", "jsonb":
				columns = append(columns, column{r.Table, r.Name, "text"})
			case "bytea":
				columns = append(columns, column{r.Table, r.Name, "bytea"})
			}
		}
	} else {
		var tables []string
		require.NoError(t, db.Bun().NewRaw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").Scan(ctx, &tables))
		for _, table := range tables {
			var names []string
			require.NoError(t, db.Bun().NewRaw("SELECT name FROM pragma_table_info(?)", table).Scan(ctx, &names))
			for _, n := range names {
				columns = append(columns, column{table, n, "any"})
			}
		}
	}
	require.Greater(t, len(columns), 100, "the catalog lists the schema's columns")
	found := map[string][]string{}
	for _, c := range columns {
		var where string
		switch c.kind {
		case "text":
			where = `strpos("` + c.name + `"::text, ?) > 0`
		case "bytea":
			where = `position(convert_to(?, 'UTF8') in "` + c.name + `") > 0`
		default:
			where = `instr(CAST("` + c.name + `" AS BLOB), CAST(? AS BLOB)) > 0`
		}
		for _, needle := range needles {
			var n int
			require.NoError(t, db.Bun().NewRaw(`SELECT COUNT(*) FROM "`+c.table+`" WHERE `+where, needle).Scan(ctx, &n), "%s.%s", c.table, c.name)
			if n > 0 {
				found[needle] = append(found[needle], c.table+"."+c.name)
			}
		}
	}
	return found
}

// hangingHooks is a webhook receiver that holds every request carrying
// hold until released, then answers 503 echoing the body; others get 200.
// It records every body it received.
type hangingHooks struct {
	*httptest.Server
	hold    string
	release chan struct{}
	mu      sync.Mutex
	bodies  []string
}

func newHangingHooks(t *testing.T, hold string) *hangingHooks {
	h := &hangingHooks{hold: hold, release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(body))
		h.mu.Unlock()
		if strings.Contains(string(body), h.hold) {
			select {
			case <-h.release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write(body)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() {
		h.Release()
		h.Close()
	})
	return h
}

// Release lets the held requests answer.
func (h *hangingHooks) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// Carrying counts the bodies received that hold s.
func (h *hangingHooks) Carrying(s string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, b := range h.bodies {
		if strings.Contains(b, s) {
			n++
		}
	}
	return n
}

// An account erases one person: afterwards no row of any table carries
// their phone number, name or the text of their messages, while another
// person's messages (in the same group) stay; their delivery still
// hanging at the receiver and their queued sends are not sent after the
// erasure; erasing again counts nothing; another account cannot reach
// them; a later message of theirs starts a new contact and thread.
func TestErasureEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		const (
			agent = "+15550000300"
			// Sends to the erased person stay queued: the sandbox channel
			// is down for this number, so their jobs keep retrying.
			phone       = sandbox.DownNumber
			name        = "Zelda Quillfeather"
			marker      = "MARKER-ZQ7-ERASE"
			otherPhone  = "+14155550177"
			otherName   = "Otto Keepwell"
			otherMarker = "KEEPER-OK4-STAYS"
		)
		hooks := newHangingHooks(t, marker)
		b := setup(t, dialect)
		acct, stranger := b.createAccount(t, "Erasing"), b.createAccount(t, "Stranger")
		b.addNumber(t, acct.AccountID, agent)
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32")
		client := srv.client(t)
		as := auth(acct.APIKey, acct.APISecret)
		post := func(path string, body any, who ...string) map[string]any {
			t.Helper()
			if who == nil {
				who = as
			}
			r := client.Do(http.MethodPost, path, body, who...)
			require.Contains(t, []int{http.StatusOK, http.StatusCreated}, r.StatusCode, "%s: %s", path, r.Body)
			return r.JSON(t)
		}
		inbound := func(from, sender, text, thread, replyTo string) string {
			body := map[string]any{"service": "whatsapp", "from": from, "to": agent, "sender_name": sender, "content": text}
			if thread != "" {
				body["thread_id"] = thread
			}
			if replyTo != "" {
				body["reply_to"] = replyTo
			}
			return post("/v1/sandbox/"+acct.AccountID+"/inbound", body)["message_id"].(string)
		}

		// The message retention: off by default, whole days from 1 to
		// 36500, null turns it off; refusals name the field.
		accountPath := "/v1/accounts/" + acct.AccountID
		r := client.Do(http.MethodGet, accountPath, nil, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Nil(t, accountData(t, r)["message_retention_days"], "off by default")
		for _, bad := range []string{`0`, `-1`, `1.5`, `"30"`, `36501`} {
			r = client.Do(http.MethodPatch, accountPath, `{"message_retention_days":`+bad+`}`, as...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", bad, r.Body)
			require.Contains(t, string(r.Body), `"loc":["body","message_retention_days"]`, bad)
		}
		r = client.Do(http.MethodPatch, accountPath, `{"message_retention_days":3650}`, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "ten years: %s", r.Body)
		require.Equal(t, 3650.0, accountData(t, r)["message_retention_days"])
		require.Equal(t, 30.0, accountData(t, r)["history_retention_days"], "the history retention stays")
		r = client.Do(http.MethodPatch, accountPath, `{"message_retention_days":null}`, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Nil(t, accountData(t, r)["message_retention_days"])
		var setGQL struct {
			Data struct {
				SetMessageRetention struct{ MessageRetentionDays *int }
			}
			Errors []struct{ Message string }
		}
		postGraphQL(t, srv.URL, acct, `mutation { setMessageRetention(days: 0) { messageRetentionDays } }`, &setGQL)
		require.Len(t, setGQL.Errors, 1)
		require.Contains(t, setGQL.Errors[0].Message, "days must be at least 1")
		setGQL.Errors = nil
		postGraphQL(t, srv.URL, acct, `mutation { setMessageRetention(days: 90) { messageRetentionDays } }`, &setGQL)
		require.Empty(t, setGQL.Errors)
		require.Equal(t, 90, *setGQL.Data.SetMessageRetention.MessageRetentionDays)
		var shown struct {
			Messages *int `json:"message_retention_days"`
		}
		b.cliJSON(t, &shown, "accounts", "retention", "--account", acct.AccountID, "--keep-messages")
		require.Nil(t, shown.Messages)
		b.cliJSON(t, &shown, "accounts", "retention", "--account", acct.AccountID, "--message-days", "30")
		require.Equal(t, 30, *shown.Messages)
		stdout, stderr, code := b.cli(t, "accounts", "retention", "--account", acct.AccountID, "--message-days", "-2")
		require.Contains(t, requireOneLineError(t, stdout, stderr, code), "message-days must be at least 1")
		b.cliJSON(t, &shown, "accounts", "retention", "--account", acct.AccountID, "--keep-messages")

		// Zelda and Otto write to the agent, then in a group with it;
		// Otto answers Zelda there, quoting her.
		first := inbound(phone, name, "hello from Zelda "+marker, "", "")
		r = client.Do(http.MethodGet, "/v1/messages/individual/"+acct.AccountID+"/get-details/"+first, nil, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		herThread := r.JSON(t)["thread_id"].(string)
		inbound(otherPhone, otherName, "hello from Otto "+otherMarker, "", "")
		group := post("/v1/sandbox/"+acct.AccountID+"/groups", map[string]any{"service": "whatsapp", "agent_number": agent, "title": "Book club",
			"participants": []string{phone, otherPhone}})["data"].(map[string]any)["thread_id"].(string)
		inGroup := inbound(phone, name, "group words of Zelda "+marker, group, "")
		inbound(otherPhone, otherName, "Otto answers "+otherMarker, group, inGroup)
		post("/v1/sandbox/"+acct.AccountID+"/reaction", map[string]any{"service": "whatsapp", "from": phone, "to": agent, "message_id": first, "emoji": "👍"})
		// The agent answers her (queued: her channel is down), once with
		// an Idempotency-Key whose stored answer names her.
		send := func(key string) string {
			t.Helper()
			headers := as
			if key != "" {
				headers = append(append([]string{}, as...), "Idempotency-Key", key)
			}
			r := client.Do(http.MethodPost, "/v1/messages/individual/"+acct.AccountID+"/send",
				map[string]any{"service": "whatsapp", "from": agent, "to": phone, "content": "agent reply " + marker}, headers...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			return r.JSON(t)["message_id"].(string)
		}
		queued := []string{send(""), send("erase-key-1")}

		// Her deliveries reach the receiver, which holds them.
		require.Eventually(t, func() bool { return hooks.Carrying(marker) > 0 }, 20*time.Second, 20*time.Millisecond, "a delivery carrying her is in flight")
		before := scanColumns(t, b.dbURL, phone, name, marker, otherPhone, otherName, otherMarker)
		for _, needle := range []string{phone, name, marker, otherPhone, otherName, otherMarker} {
			require.NotEmpty(t, before[needle], "%q is stored before the erasure", needle)
		}
		require.Contains(t, before[marker], "messages.quoted_text", "Otto's answer quotes her")

		// Her contact.
		r = client.Do(http.MethodGet, "/v1/contacts/"+acct.AccountID+"?search=Zelda", nil, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		var contacts struct {
			Data []struct {
				ContactID string `json:"contact_id"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &contacts))
		require.Len(t, contacts.Data, 1)
		contact := contacts.Data[0].ContactID
		erasures := "/v1/accounts/" + acct.AccountID + "/erasures"

		// Bad requests, and another account, erase nothing.
		for _, bad := range []struct {
			body string
			loc  string
		}{
			{`{}`, "contact_id"},
			{`{"phone":"` + phone + `","contact_id":"` + contact + `"}`, "phone"},
			{`{"phone":"5550000"}`, "phone"},
			{`{"contact_id":"thr_nope"}`, "contact_id"},
			{`{"email":"not an address"}`, "email"},
		} {
			r := client.Do(http.MethodPost, erasures, bad.body, as...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", bad.body, r.Body)
			require.Contains(t, string(r.Body), `"loc":["body","`+bad.loc+`"]`, bad.body)
		}
		strangerAuth := auth(stranger.APIKey, stranger.APISecret)
		r = client.Do(http.MethodPost, "/v1/accounts/"+stranger.AccountID+"/erasures", map[string]any{"contact_id": contact}, strangerAuth...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's contact: %s", r.Body)
		r = client.Do(http.MethodPost, erasures, map[string]any{"contact_id": contact}, strangerAuth...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "another account's path: %s", r.Body)
		r = client.Do(http.MethodPost, erasures, map[string]any{"contact_id": ident.New(ident.Contact)}, as...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "a contact id never seen: %s", r.Body)
		r = client.Do(http.MethodPost, "/v1/accounts/"+stranger.AccountID+"/erasures", map[string]any{"phone": phone}, strangerAuth...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, 0.0, r.JSON(t)["data"].(map[string]any)["total"], "the stranger holds nothing about her")
		require.NotEmpty(t, scanColumns(t, b.dbURL, marker)[marker], "nothing was erased")

		// The erasure.
		res := post(erasures, map[string]any{"contact_id": contact})["data"].(map[string]any)
		hooks.Release()
		counts := res["counts"].(map[string]any)
		require.Equal(t, "contact", res["identifier_kind"])
		require.Equal(t, "key:"+acct.KeyID, res["requested_by"])
		require.NotContains(t, res["identifier_hash"], contact)
		require.Equal(t, 1.0, counts["people"], "%v", counts)
		require.Equal(t, 1.0, counts["threads"], "her individual thread: %v", counts)
		require.Equal(t, 4.0, counts["messages"], "hers, the agent's two to her, hers in the group: %v", counts)
		require.Equal(t, 1.0, counts["message_reactions"], "%v", counts)
		require.Equal(t, 3.0, counts["thread_participants"], "her thread's two (her, the agent) and hers in the group: %v", counts)
		require.Greater(t, counts["events"], 0.0)
		require.Greater(t, counts["webhook_deliveries"], 0.0)
		require.Equal(t, 1.0, counts["idempotency_responses"], "%v", counts)

		// Her queued sends are gone: their jobs find nothing to send.
		for _, id := range queued {
			r := client.Do(http.MethodGet, "/v1/messages/individual/"+acct.AccountID+"/get-details/"+id, nil, as...)
			require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		}
		// The held delivery answered after the erasure (echoing her
		// text): nothing of it is written back, and nothing carrying her
		// is sent again.
		sent := hooks.Carrying(marker)
		time.Sleep(2 * time.Second)
		require.Equal(t, sent, hooks.Carrying(marker), "no delivery carrying her after the erasure")
		after := scanColumns(t, b.dbURL, phone, name, marker, otherPhone, otherName, otherMarker)
		for _, needle := range []string{phone, name, marker} {
			require.Empty(t, after[needle], "%q is erased from every table", needle)
		}
		for _, needle := range []string{otherPhone, otherName, otherMarker} {
			require.NotEmpty(t, after[needle], "%q stays", needle)
		}
		require.Contains(t, after[otherMarker], "messages.body", "Otto's messages stay")

		// The group stays, without her.
		r = client.Do(http.MethodGet, "/v1/messages/threads/"+acct.AccountID+"/get-details/"+group, nil, as...)
		require.Equal(t, http.StatusOK, r.StatusCode, "the group stays: %s", r.Body)

		// Again: nothing left, nothing counted; the record is kept.
		again := post(erasures, map[string]any{"contact_id": contact})["data"].(map[string]any)
		require.Equal(t, 0.0, again["total"])
		require.Empty(t, again["counts"])
		require.Equal(t, res["identifier_hash"], again["identifier_hash"])
		byPhone := post(erasures, map[string]any{"phone": phone})["data"].(map[string]any)
		require.Equal(t, 0.0, byPhone["total"], "%v", byPhone)

		// A send to her now does not reach her erased thread (the send
		// cache forgets it: adapters/cache TestErasedThreadsAreForgotten).
		r = client.Do(http.MethodPost, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": agent, "to": phone, "content": "after the erasure"}, as...)
		if r.StatusCode == http.StatusOK {
			require.NotEqual(t, herThread, r.JSON(t)["thread_id"], "the erased thread is not used again")
		}
		r = client.Do(http.MethodGet, "/v1/messages/threads/"+acct.AccountID+"/get-details/"+herThread, nil, as...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "her thread is gone: %s", r.Body)

		// She writes again: a new contact and a new thread.
		inbound(phone, name, "back again", "", "")
		r = client.Do(http.MethodGet, "/v1/contacts/"+acct.AccountID+"?search=Zelda", nil, as...)
		require.NoError(t, json.Unmarshal(r.Body, &contacts))
		require.Len(t, contacts.Data, 1)
		require.NotEqual(t, contact, contacts.Data[0].ContactID)

		// A person known by an email address: the mail from and to it
		// (received, sent, kept by the sandbox mailbox) goes; another
		// correspondent's stays.
		domain := accountData(t, client.Do(http.MethodGet, accountPath, nil, as...))["service_email_domain"].(string)
		mailbox := "helpdesk@" + domain
		post("/v1/emails/"+acct.AccountID+"/create-email", map[string]any{"address": "helpdesk", "domain_name": domain})
		const mailMarker, otherMail = "MAILMARK-Q9", "KEEPMAIL-Z2"
		post("/v1/sandbox/"+acct.AccountID+"/inbound-email", map[string]any{"from": "Zelda Q <Zelda.Q@example.org>", "to": mailbox,
			"subject": "question " + mailMarker, "text": "my question " + mailMarker})
		post("/v1/emails/"+acct.AccountID+"/send", map[string]any{"sender_address": mailbox, "recipient_address": "zelda.q@example.org",
			"subject": "answer " + mailMarker, "body": "our answer " + mailMarker})
		post("/v1/sandbox/"+acct.AccountID+"/inbound-email", map[string]any{"from": "otto@example.net", "to": mailbox,
			"subject": "other " + otherMail, "text": "other " + otherMail})
		require.NotEmpty(t, scanColumns(t, b.dbURL, mailMarker)[mailMarker])
		byEmail := post(erasures, map[string]any{"email": "ZELDA.Q@example.org"})["data"].(map[string]any)
		require.Equal(t, "email", byEmail["identifier_kind"])
		require.GreaterOrEqual(t, byEmail["counts"].(map[string]any)["emails"], 2.0, "%v", byEmail)
		mail := scanColumns(t, b.dbURL, mailMarker, "zelda.q@example.org", "Zelda.Q@example.org", otherMail)
		for _, needle := range []string{mailMarker, "zelda.q@example.org", "Zelda.Q@example.org"} {
			require.Empty(t, mail[needle], "%q is erased from every table", needle)
		}
		require.NotEmpty(t, mail[otherMail], "another correspondent's mail stays")

		// The operator's CLI and GraphQL erase too.
		var cli struct {
			Total       int            `json:"total"`
			RequestedBy string         `json:"requested_by"`
			Counts      map[string]int `json:"counts"`
		}
		b.cliJSON(t, &cli, "erase", "--account", acct.AccountID, "--phone", phone)
		require.Equal(t, "cli", cli.RequestedBy)
		require.Equal(t, 1, cli.Counts["people"], "%+v", cli)
		require.GreaterOrEqual(t, cli.Counts["messages"], 1, "%+v", cli)
		stdout, stderr, code = b.cli(t, "erase", "--account", acct.AccountID, "--contact", ident.New(ident.Contact))
		require.Contains(t, requireOneLineError(t, stdout, stderr, code), "not found")
		var gql struct {
			Data struct {
				ErasePerson struct {
					Total          int
					IdentifierKind string
				}
			}
			Errors []struct{ Message string }
		}
		postGraphQL(t, srv.URL, acct, `mutation { erasePerson(userId: "@nobody_here") { total identifierKind } }`, &gql)
		require.Empty(t, gql.Errors)
		require.Equal(t, "user_id", gql.Data.ErasePerson.IdentifierKind)
		require.Equal(t, 0, gql.Data.ErasePerson.Total)
		postGraphQL(t, srv.URL, acct, `mutation { erasePerson(phone: "`+phone+`", email: "a@b.example") { total } }`, &gql)
		require.Len(t, gql.Errors, 1)
		require.Contains(t, gql.Errors[0].Message, "exactly one")
		srv.stop(t)
	})
}
