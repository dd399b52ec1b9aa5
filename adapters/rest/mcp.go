package rest

import (
	"net/http"

	"github.com/gorilla/mux"
)

// mcpPath is where the Model Context Protocol is served.
const mcpPath = "/mcp"

// mountMCP routes /mcp to h behind the API's authentication: the
// credentials' account is the one every tool acts for, and failed
// credentials count against the client address like any other. h spends
// the account's request token itself, one per HTTP request, so that a
// refused tool call is answered as the call's own error; this middleware
// spends none. Only the
// API key headers authenticate it: the dashboard's session cookie is
// dropped, since MCP requests carry no CSRF token and a browser would add
// the cookie to a cross-site request by itself.
func (s *server) mountMCP(root *mux.Router, h http.Handler) {
	if h == nil {
		return
	}
	authenticated := s.authenticateOnly(h)
	root.Handle(mcpPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Cookie")
		authenticated.ServeHTTP(w, r)
	})).Methods(http.MethodGet, http.MethodPost, http.MethodDelete)
}
