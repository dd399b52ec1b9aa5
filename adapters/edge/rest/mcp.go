package rest

import (
	"net/http"

	"github.com/gorilla/mux"
)

// mcpPath is where the Model Context Protocol is served.
const mcpPath = "/mcp"

// mountMCP routes /mcp to h behind the API's authentication and limits:
// the credentials' account is the one every tool acts for, each HTTP
// request spends one of the account's request tokens, and failed
// credentials count against the client address like any other. A
// request beyond the budget reaches h with its refused quota in the
// context, so that h answers a refused tool call as the call's own error
// (and anything else 429). Only the API key headers authenticate it: the
// dashboard's session cookie is dropped, since MCP requests carry no CSRF
// token and a browser would add the cookie to a cross-site request by
// itself.
func (s *server) mountMCP(root *mux.Router, h http.Handler) {
	if h == nil {
		return
	}
	authenticated := s.authenticateHandingOnRefusals(h)
	root.Handle(mcpPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Cookie")
		authenticated.ServeHTTP(w, r)
	})).Methods(http.MethodGet, http.MethodPost, http.MethodDelete)
}
