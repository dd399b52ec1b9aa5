package rest

import (
	"net/http"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/domain/failure"

	"github.com/gorilla/mux"
	"github.com/switchboard-dev/switchboard/adapters/edge"
)

// mountGraphQLPublic routes to h, ahead of the authenticated /graphql
// route, the GraphQL requests that authenticate otherwise: WebSocket
// upgrades of /graphql (credentials in connection_init, or the session
// cookie of the upgrade) and the playground page.
func (s *server) mountGraphQLPublic(root *mux.Router, h http.Handler) {
	if h == nil {
		return
	}
	named := func(route string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			infoFrom(r.Context()).route = route
			// The socket's own authentication counts against the same
			// client address as a request's.
			h.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), clientAddress(r))))
		})
	}
	socket := named("/graphql (websocket)")
	root.Handle("/graphql", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A browser opens a socket to any origin with its cookies, and
		// the socket's operations carry no CSRF token: an upgrade that
		// carries the session cookie must come from the server's own
		// pages, and say so (browsers always send Origin on upgrades).
		if _, err := r.Cookie(edge.SessionCookie); err == nil && s.sessions != nil {
			origin := r.Header.Get("Origin")
			if origin == "" || !edge.FromOwnOrigin(origin, r.Header.Get("Sec-Fetch-Site"), r.Host, r.TLS != nil) {
				infoFrom(r.Context()).route = "/graphql (websocket)"
				writeError(w, r, failure.Forbidden("cross_site_request", "a WebSocket with the dashboard's session cookie must be opened from the dashboard's own origin"))
				return
			}
		}
		socket.ServeHTTP(w, r)
	})).Methods(http.MethodGet).HeadersRegexp("Upgrade", "(?i)^websocket$")
	root.Handle("/graphql/playground", named("/graphql/playground")).Methods(http.MethodGet)
	root.PathPrefix("/graphql/playground/assets/").Handler(named("/graphql/playground/assets")).Methods(http.MethodGet)
}
