package edge

import (
	"net/http"
)

// mcpPath is where the Model Context Protocol is served.
const mcpPath = "/mcp"

// MountMCP routes /mcp to handler behind the API's authentication and
// limits: the credentials' account is the one every tool acts for, each
// HTTP request spends one of the account's request tokens, and failed
// credentials count against the client address like any other. A request
// beyond the budget reaches handler with its refused quota in the context,
// so that handler answers a refused tool call as the call's own error (and
// anything else 429). Only the API key headers authenticate it: the
// dashboard's session cookie is dropped, since MCP requests carry no CSRF
// token and a browser would add the cookie to a cross-site request by
// itself.
func (h *Host) MountMCP(handler http.Handler) {
	authenticated := h.authenticateHandingOnRefusals(handler)
	h.router.Handle(mcpPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Cookie")
		authenticated.ServeHTTP(w, r)
	})).Methods(http.MethodGet, http.MethodPost, http.MethodDelete)
}
