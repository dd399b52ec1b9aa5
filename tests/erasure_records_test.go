package tests

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The audit records of an account's erasures (REST, the CLI's and
// GraphQL's among them) are listed newest first, a cursor page at a time,
// over REST and GraphQL; another account sees its own only.
func TestErasureRecordsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct, stranger := b.createAccount(t, "Erasing"), b.createAccount(t, "Stranger")
		srv := b.serve(t)
		client := srv.client(t)
		as := auth(acct.APIKey, acct.APISecret)
		erasures := "/v1/accounts/" + acct.AccountID + "/erasures"

		type record struct {
			ErasureID      string         `json:"erasure_id"`
			AccountID      string         `json:"account_id"`
			RequestedBy    string         `json:"requested_by"`
			IdentifierKind string         `json:"identifier_kind"`
			IdentifierHash string         `json:"identifier_hash"`
			Counts         map[string]int `json:"counts"`
			Total          int            `json:"total"`
			CreatedAt      string         `json:"created_at"`
		}
		type page struct {
			Data       []record `json:"data"`
			NextCursor *string  `json:"next_cursor"`
		}
		list := func(query string, who ...string) page {
			t.Helper()
			if who == nil {
				who = as
			}
			r := client.Do(http.MethodGet, erasures+query, nil, who...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var p page
			require.NoError(t, json.Unmarshal(r.Body, &p))
			return p
		}

		require.Empty(t, list("").Data, "none yet")
		require.Nil(t, list("").NextCursor)

		// Four erasures: three through REST, one by the operator.
		var made []record
		for _, body := range []string{`{"phone":"+14155550101"}`, `{"user_id":"@someone"}`, `{"email":"ann@example.org"}`} {
			r := client.Do(http.MethodPost, erasures, body, as...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var one struct{ Data record }
			require.NoError(t, json.Unmarshal(r.Body, &one))
			made = append(made, one.Data)
		}
		var cli record
		b.cliJSON(t, &cli, "erase", "--account", acct.AccountID, "--phone", "+14155550102")
		r := client.Do(http.MethodPost, "/v1/accounts/"+stranger.AccountID+"/erasures", `{"phone":"+14155550103"}`, auth(stranger.APIKey, stranger.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

		// Newest first, two a page; each record as its erasure answered.
		var ids []string
		for cursor := ""; ; {
			p := list("?limit=2" + cursor)
			for _, rec := range p.Data {
				ids = append(ids, rec.ErasureID)
			}
			if p.NextCursor == nil {
				break
			}
			require.Len(t, p.Data, 2)
			cursor = "&cursor=" + url.QueryEscape(*p.NextCursor)
		}
		require.Len(t, ids, 4, "the account's four, not the stranger's")
		require.Equal(t, []string{made[2].ErasureID, made[1].ErasureID, made[0].ErasureID}, ids[1:], "newest first")
		require.Equal(t, "cli", list("?limit=1").Data[0].RequestedBy, "the operator's is the newest")
		all := list("")
		require.Equal(t, made[0], all.Data[3], "a record reads as its erasure answered")

		// Refusals.
		for _, q := range []string{"?limit=0", "?limit=101", "?limit=x"} {
			r := client.Do(http.MethodGet, erasures+q, nil, as...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", q, r.Body)
			require.Contains(t, string(r.Body), `"loc":["query","limit"]`, q)
		}
		r = client.Do(http.MethodGet, erasures+"?cursor=bm9wZQ", nil, as...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
		require.Contains(t, string(r.Body), `"loc":["query","cursor"]`)
		r = client.Do(http.MethodGet, erasures, nil, auth(stranger.APIKey, stranger.APISecret)...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "another account's records: %s", r.Body)

		// GraphQL pages the same records with the same cursors.
		var gql struct {
			Data struct {
				Erasures struct {
					Nodes []struct {
						ID          string
						RequestedBy string
						Total       int
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
			Errors []struct{ Message string }
		}
		postGraphQL(t, srv.URL, acct, `{ erasures(first: 3) { nodes { id requestedBy total } pageInfo { hasNextPage endCursor } } }`, &gql)
		require.Empty(t, gql.Errors)
		require.True(t, gql.Data.Erasures.PageInfo.HasNextPage)
		require.Len(t, gql.Data.Erasures.Nodes, 3)
		require.Equal(t, ids[0], gql.Data.Erasures.Nodes[0].ID)
		postGraphQL(t, srv.URL, acct, `{ erasures(first: 3, after: "`+gql.Data.Erasures.PageInfo.EndCursor+`") { nodes { id requestedBy total } pageInfo { hasNextPage endCursor } } }`, &gql)
		require.Empty(t, gql.Errors)
		require.False(t, gql.Data.Erasures.PageInfo.HasNextPage)
		require.Len(t, gql.Data.Erasures.Nodes, 1)
		require.Equal(t, made[0].ErasureID, gql.Data.Erasures.Nodes[0].ID)
		require.Equal(t, "key:"+acct.KeyID, gql.Data.Erasures.Nodes[0].RequestedBy)
		srv.stop(t)
	})
}
