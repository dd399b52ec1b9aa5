package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// A retention that is not positive stops the server before it starts,
// saying which setting is wrong; ten years is a retention like any other.
func TestHistoryRetentionRefusedAtStart(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	for _, bad := range [][]string{
		{"--history-retention", "0"},
		{"--history-retention", "-3d"},
		{"--history-retention", "-720h"},
	} {
		stdout, stderr, code := b.cli(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, bad...)...)
		line := requireOneLineError(t, stdout, stderr, code)
		require.Contains(t, line, "history-retention", "%v", bad)
		require.Contains(t, line, "must be positive", "%v", bad)
	}
	stdout, stderr, code := runCLI(t, append(b.env, "SWITCHBOARD_HISTORY_RETENTION=0d"), "serve", "--addr", "127.0.0.1:0", "--database-url", b.dbURL)
	require.Contains(t, requireOneLineError(t, stdout, stderr, code), "SWITCHBOARD_HISTORY_RETENTION")
	_, stderr, code = b.cli(t, "serve", "--addr", "127.0.0.1:0", "--history-retention", "thirty")
	require.NotZero(t, code)
	require.Contains(t, stderr, "use a duration such as 720h, or days such as 30d")

	srv := b.serve(t, "--addr", "127.0.0.1:0", "--history-retention", "3650d")
	srv.waitReady(t)
	srv.stop(t)
}

// An account's history goes after its retention, what is still needed
// stays, and the API says what happened to what went: the server keeps
// history six seconds, one account keeps its own for ten years.
func TestHistoryRetentionEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		// The receiver answers 503 to the message that must stay pending,
		// 200 to every other.
		hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), "keep me pending") {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(hooks.Close)

		b := setup(t, dialect)
		brief, decade := b.createAccount(t, "Brief"), b.createAccount(t, "Decade")
		for i, acct := range []createdAccount{brief, decade} {
			b.addNumber(t, acct.AccountID, fmt.Sprintf("+1555000010%d", i))
			var hook webhookOut
			b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL+"/"+acct.AccountID, "--allow-private-urls", "127.0.0.1/32")
		}
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--history-retention", "6s", "--history-prune-interval", "200ms")
		client := srv.client(t)
		as := func(acct createdAccount) []string { return auth(acct.APIKey, acct.APISecret) }

		// The account setting: the server's period, the account's own,
		// and refusals naming the field.
		r := client.Do(http.MethodGet, "/v1/accounts/"+brief.AccountID, nil, as(brief)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		data := accountData(t, r)
		require.InDelta(t, 6.0/86400, data["history_retention_days"], 1e-9)
		require.Equal(t, "server", data["history_retention_source"])
		for _, bad := range []string{`0`, `-1`, `1.5`, `"30"`, `36501`} {
			r = client.Do(http.MethodPatch, "/v1/accounts/"+decade.AccountID, `{"history_retention_days":`+bad+`}`, as(decade)...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", bad, r.Body)
			require.Contains(t, string(r.Body), `"loc":["body","history_retention_days"]`, bad)
		}
		r = client.Do(http.MethodPatch, "/v1/accounts/"+decade.AccountID, `{}`, as(decade)...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPatch, "/v1/accounts/"+decade.AccountID, `{"history_retention_days":3650}`, as(brief)...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "another account's setting: %s", r.Body)
		r = client.Do(http.MethodPatch, "/v1/accounts/"+decade.AccountID, `{"history_retention_days":3650}`, as(decade)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		data = accountData(t, r)
		require.Equal(t, 3650.0, data["history_retention_days"])
		require.Equal(t, "account", data["history_retention_source"])
		require.Equal(t, "Decade", data["name"], "the name stays")

		var gql struct {
			Data struct {
				SetHistoryRetention struct {
					HistoryRetentionDays   float64
					HistoryRetentionSource string
				}
			}
			Errors []struct {
				Message    string
				Extensions map[string]any
			}
		}
		postGraphQL(t, srv.URL, decade, `mutation { setHistoryRetention(days: 0) { historyRetentionDays } }`, &gql)
		require.Len(t, gql.Errors, 1)
		require.Contains(t, gql.Errors[0].Message, "days must be at least 1")
		gql.Errors = nil
		postGraphQL(t, srv.URL, decade, `mutation { setHistoryRetention(days: 3650) { historyRetentionDays historyRetentionSource } }`, &gql)
		require.Empty(t, gql.Errors)
		require.Equal(t, 3650.0, gql.Data.SetHistoryRetention.HistoryRetentionDays)
		require.Equal(t, "ACCOUNT", gql.Data.SetHistoryRetention.HistoryRetentionSource)

		// History: a delivered message and one whose delivery keeps
		// failing, for each account.
		inbound := func(acct createdAccount, agent, text string) {
			r := client.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
				map[string]any{"service": "whatsapp", "from": "+14155550123", "to": agent, "content": text}, as(acct)...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		}
		inbound(brief, "+15550000100", "delivered")
		inbound(brief, "+15550000100", "keep me pending")
		inbound(decade, "+15550000101", "delivered")
		type delivery struct {
			ID       string `json:"id"`
			EventID  string `json:"event_id"`
			Status   string `json:"status"`
			Attempts int    `json:"attempt_count"`
		}
		deliveries := func(acct createdAccount) []delivery {
			r := client.Do(http.MethodGet, "/v1/accounts/"+acct.AccountID+"/webhook/deliveries", nil, as(acct)...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var page struct {
				Data []delivery `json:"data"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &page))
			return page.Data
		}
		var done, pending delivery
		require.Eventually(t, func() bool {
			ds := deliveries(brief)
			done, pending = delivery{}, delivery{}
			for _, d := range ds {
				switch {
				case d.Status == "succeeded":
					done = d
				case d.Status == "pending" && d.Attempts > 0:
					pending = d
				}
			}
			return done.ID != "" && pending.ID != ""
		}, 20*time.Second, 50*time.Millisecond, "one delivered, one failing")

		// The pruner takes the delivered one and its event once they are
		// six seconds old; the failing one and its event stay.
		require.Eventually(t, func() bool {
			return !slices.ContainsFunc(deliveries(brief), func(d delivery) bool { return d.ID == done.ID })
		}, 30*time.Second, 100*time.Millisecond, "the delivered delivery is pruned")
		kept := deliveries(brief)
		require.Len(t, kept, 1)
		require.Equal(t, pending.ID, kept[0].ID, "a delivery still retrying is never pruned")
		require.Equal(t, "pending", kept[0].Status)
		events := updates(t, client, brief, "")
		require.NotContains(t, events, done.EventID, "the delivered event went with its delivery")
		require.Contains(t, events, pending.EventID, "the event a pending delivery sends stays")

		require.NotEmpty(t, deliveries(decade), "an account keeping its history ten years keeps it")
		require.NotEmpty(t, updates(t, client, decade, ""))

		// What the API says about what went.
		r = client.Do(http.MethodPost, "/v1/accounts/"+brief.AccountID+"/webhook/deliveries/"+done.ID+"/replay", nil, as(brief)...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		require.Equal(t, "delivery_pruned", r.JSON(t)["code"], "%s", r.Body)
		r = client.Do(http.MethodPost, "/v1/accounts/"+brief.AccountID+"/webhook/deliveries/"+ident.New(ident.Webhook)+"/replay", nil, as(brief)...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		require.Equal(t, "not_found", r.JSON(t)["code"], "an id that never was is not found: %s", r.Body)
		r = client.Do(http.MethodGet, "/v1/messages/updates?after="+done.EventID, nil, as(brief)...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
		require.Contains(t, string(r.Body), `"loc":["query","after"]`)
		require.Contains(t, string(r.Body), `"type":"cursor_pruned"`)

		// The operator's view of the same setting.
		var shown struct {
			Days   float64 `json:"history_retention_days"`
			Source string  `json:"history_retention_source"`
		}
		b.cliJSON(t, &shown, "accounts", "retention", "--account", decade.AccountID)
		require.Equal(t, 3650.0, shown.Days)
		require.Equal(t, "account", shown.Source)
		b.cliJSON(t, &shown, "accounts", "retention", "--account", decade.AccountID, "--default", "--history-retention", "45d")
		require.Equal(t, 45.0, shown.Days)
		require.Equal(t, "server", shown.Source)
		b.cliJSON(t, &shown, "accounts", "retention", "--account", decade.AccountID, "--days", "90")
		require.Equal(t, 90.0, shown.Days)
		stdout, stderr, code := b.cli(t, "accounts", "retention", "--account", decade.AccountID, "--days", "0")
		require.Contains(t, requireOneLineError(t, stdout, stderr, code), "days must be at least 1")
		stdout, stderr, code = b.cli(t, "accounts", "retention", "--account", ident.New(ident.Account), "--days", "90")
		require.Contains(t, requireOneLineError(t, stdout, stderr, code), "not found")
		srv.stop(t)
	})
}

// updates reads the ids of the account's polled events after the cursor.
func updates(t *testing.T, client *openapitest.Client, acct createdAccount, after string) []string {
	t.Helper()
	r := client.Do(http.MethodGet, "/v1/messages/updates?limit=100&after="+after, nil, auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var page struct {
		Data []struct {
			EventID string `json:"event_id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &page))
	var ids []string
	for _, e := range page.Data {
		ids = append(ids, e.EventID)
	}
	return ids
}
