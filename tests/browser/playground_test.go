package browser

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The GraphQL playground (GraphiQL, every file of it served by the
// binary) renders under its Content-Security-Policy, introspects the
// schema and runs a query with the headers typed into its header editor:
// the account's own answer comes back.
func TestPlaygroundRunsAQuery(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	tb := newTab(t, s.URL)
	tb.open("/graphql/playground")
	tb.waitVisible(".graphiql-container .graphiql-query-editor .CodeMirror")
	// The example headers carry the real keys' prefixes.
	// Of the tool editors (variables, headers), the page opens the headers'.
	headersEditor := `document.querySelector('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').CodeMirror`
	tb.waitFor("the example headers", `() => `+headersEditor+`.getValue().includes('swk_YOUR_KEY')`)

	headers, err := json.Marshal(map[string]string{"X-API-Key": s.Account.Key, "X-API-Secret": s.Account.Secret})
	require.NoError(t, err)
	tb.do(evalVoid(headersEditor + `.setValue(` + jsString(string(headers)) + `)`))
	// GraphiQL's own introspection query passes the server's bounds: the
	// schema, fetched again with the account's headers, is documented.
	// GraphiQL takes up an edited header a moment after the edit, hence
	// the fetch until the schema shows.
	tb.click(`[aria-label="Show Documentation Explorer"]`)
	tb.untilShown(".graphiql-doc-explorer", "Subscription", func(int) {
		tb.click(`[aria-label="Re-fetch GraphQL schema"]`)
	})
	tb.do(evalVoid(`document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue('{ account { id name } }')`))
	tb.click(".graphiql-execute-button")
	tb.waitFor("the query's answer", `(id) => {
		const out = document.querySelector('.graphiql-response .CodeMirror');
		return out && out.CodeMirror.getValue().includes(id);
	}`, s.Account.ID)

	// A subscription goes over the WebSocket with the same headers, as its
	// connection_init payload: a user's message arrives in the answer.
	tb.do(evalVoid(`document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue('subscription Live { messageReceived { id from content { text } } }')`))
	tb.click(".graphiql-execute-button")
	tb.untilShown(".graphiql-response", "hello playground", func(i int) {
		s.inbound("+14155550100", "Pat", "hello playground")
	})
	tb.requireHealthy()
}
