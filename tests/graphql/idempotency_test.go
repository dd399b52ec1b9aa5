package graphql_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A mutation with an Idempotency-Key runs once: a repeat answers the first
// response, and the key with another operation is the conflict REST
// answers for a key reused with another request.
func TestMutationsHonourTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		_, thread := b.inbound(t, b.acme, userA, agentA, "hello")
		send := `mutation($in: SendMessageInput!) { sendMessage(input: $in) { id status } }`
		in := func(text string) map[string]any {
			return map[string]any{"in": map[string]any{"service": "WHATSAPP", "from": agentA, "to": userA, "text": text}}
		}
		keyed := b.acme.headers()
		keyed.Set("Idempotency-Key", "send-once")
		messages := func() int {
			var d struct {
				Thread struct {
					Messages struct {
						Nodes []struct {
							ID string `json:"id"`
						} `json:"nodes"`
					} `json:"messages"`
				} `json:"thread"`
			}
			b.data(t, b.acme, `query($t: ID!) { thread(id: $t) { messages(first: 50) { nodes { id } } } }`, map[string]any{"t": thread}, &d)
			return len(d.Thread.Messages.Nodes)
		}
		before := messages()

		status, first := b.queryStatus(t, keyed, send, in("only once"))
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, first.Errors)
		status, again := b.queryStatus(t, keyed, send, in("only once"))
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, again.Errors)
		require.JSONEq(t, string(first.Data), string(again.Data), "the repeat answers the first response")
		require.Equal(t, before+1, messages(), "the work is done once")

		status, other := b.queryStatus(t, keyed, send, in("something else"))
		require.Equal(t, http.StatusOK, status)
		require.Len(t, other.Errors, 1)
		require.Equal(t, before+1, messages(), "a refused operation does nothing")

		// REST answers the same key with another request so.
		body, err := json.Marshal(map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "content": "by REST"})
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/v1/messages/individual/"+b.acme.accountID+"/send", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = keyed.Clone()
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusConflict, res.StatusCode)
		var rest struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&rest))
		require.Equal(t, "idempotency_key_reused", rest.Code)
		require.Equal(t, rest.Code, other.Errors[0].Extensions["code"])
		require.Equal(t, rest.Message, other.Errors[0].Message)

		// Queries ignore the key.
		status, q := b.queryStatus(t, keyed, `query { account { id } }`, nil)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, q.Errors)
	})
}
