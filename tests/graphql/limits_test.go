package graphql_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// WebSockets spend the budgets HTTP requests spend: a refused
// connection_init is a failed authentication of the client address (300
// wrong secrets over sockets used to go unlimited), and each operation on
// a socket is one of its account's requests (400 sends over one socket
// used to pass where REST answered 429).
func TestSocketsSpendTheBudgetsOfRequests(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		t.Run("FailedAuthentications", func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) { c.Limits.AuthFailuresPerMinute = 5 }})
			wrong := map[string]any{"X-API-Key": b.acme.key, "X-API-Secret": "wrong"}
			refused := 0
			for range 30 {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.base, "http")+"/graphql", &websocket.DialOptions{
					Subprotocols: []string{"graphql-transport-ws"},
				})
				cancel()
				if err != nil {
					require.NotNil(t, res, "the upgrade is answered: %v", err)
					require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
					wait, convErr := strconv.Atoi(res.Header.Get("Retry-After"))
					require.NoError(t, convErr)
					require.Positive(t, wait)
					refused++
					continue
				}
				s := &socket{t: t, conn: conn}
				raw, _ := json.Marshal(wrong)
				s.send(wsMessage{Type: "connection_init", Payload: raw})
				_, _, err = conn.Read(t.Context())
				require.Equal(t, websocket.StatusCode(4403), websocket.CloseStatus(err), "a wrong secret: %v", err)
				_ = conn.CloseNow()
			}
			require.Equal(t, 25, refused, "five failures a minute, then 429 before any socket opens")

			// One budget for both transports: the right credentials over
			// HTTP from the same address wait too.
			status, _ := b.queryStatus(t, b.acme.headers(), `{ account { id } }`, nil)
			require.Equal(t, http.StatusTooManyRequests, status)
		})

		t.Run("MutationFields", func(t *testing.T) {
			// Each top-level field of a mutation does what a REST request
			// does, so each after the first spends a token of its own:
			// five aliased sends in one request used to cost one.
			t.Parallel()
			b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
				c.Limits.RatePerSecond, c.Limits.RateBurst = 0.05, 6
			}})
			b.inbound(t, b.acme, userA, agentA, "write to me")
			var fields []string
			for i := range 5 {
				fields = append(fields, "s"+strconv.Itoa(i)+`: sendMessage(input: {service: WHATSAPP, from: "`+agentA+`", to: "`+userA+`", text: "ping"}) { id }`)
			}
			mutation := "mutation { " + strings.Join(fields, " ") + " }"
			sent, limited := 0, 0
			for range 3 {
				status, resp := b.queryStatus(t, b.acme.headers(), mutation, nil)
				if status == http.StatusTooManyRequests {
					limited++
					continue
				}
				require.Equal(t, http.StatusOK, status)
				var data map[string]*struct{ ID string }
				if len(resp.Data) > 0 && string(resp.Data) != "null" {
					require.NoError(t, json.Unmarshal(resp.Data, &data))
				}
				for _, m := range data {
					if m != nil && m.ID != "" {
						sent++
					}
				}
				for _, e := range resp.Errors {
					require.Equal(t, "rate_limited", e.Extensions["code"], "message: %s", e.Message)
					limited++
				}
			}
			// The sandbox inbound spent one of the six tokens.
			require.LessOrEqual(t, sent, 6, "five tokens, and what refills meanwhile, buy as many sends")
			require.GreaterOrEqual(t, sent, 5)
			require.Positive(t, limited)
		})

		t.Run("Operations", func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
				c.Limits.RatePerSecond, c.Limits.RateBurst = 0.2, 6
			}})
			s := b.dial(t, nil, map[string]any{"X-API-Key": b.acme.key, "X-API-Secret": b.acme.secret})
			admitted, limited := 0, 0
			for i := range 20 {
				id := strconv.Itoa(i)
				raw, _ := json.Marshal(map[string]any{"query": `{ account { id } }`})
				s.send(wsMessage{ID: id, Type: "subscribe", Payload: raw})
				m := s.next(10 * time.Second)
				require.Equal(t, "next", m.Type, "payload: %s", m.Payload)
				var p gqlResponse
				require.NoError(t, json.Unmarshal(m.Payload, &p))
				if len(p.Errors) == 0 {
					admitted++
				} else {
					require.Equal(t, "rate_limited", p.Errors[0].Extensions["code"])
					require.Positive(t, p.Errors[0].Extensions["retryAfter"])
					limited++
				}
				require.Equal(t, "complete", s.next(10*time.Second).Type)
			}
			require.LessOrEqual(t, admitted, 7, "the burst of 6, and what 0.2/s refills meanwhile")
			require.GreaterOrEqual(t, admitted, 6)
			status, _ := b.queryStatus(t, b.acme.headers(), `{ account { id } }`, nil)
			require.Equal(t, http.StatusTooManyRequests, status, "the socket spent the account's budget")
			b.query(t, b.other, `{ account { id } }`, nil) // another account's budget is its own
		})
	})
}
