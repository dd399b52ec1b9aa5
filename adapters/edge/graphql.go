package edge

import (
	"net/http"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// MountGraphQL routes /graphql (GET and POST) to authenticated behind the
// API's authentication and limits. When public is set, it routes to
// public, ahead of that, the GraphQL requests that authenticate
// otherwise: WebSocket upgrades of /graphql (credentials in
// connection_init, or the session cookie of the upgrade) and the
// playground page.
func (h *Host) MountGraphQL(authenticated, public http.Handler) {
	if public != nil {
		h.mountGraphQLPublic(public)
	}
	h.router.Handle("/graphql", h.authenticate(authenticated)).Methods(http.MethodGet, http.MethodPost)
}

func (h *Host) mountGraphQLPublic(public http.Handler) {
	root := h.router
	named := func(route string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			NameRoute(r.Context(), route)
			// The socket's own authentication counts against the same
			// client address as a request's.
			public.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), ClientAddress(r))))
		})
	}
	socket := named("/graphql (websocket)")
	root.Handle("/graphql", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A browser opens a socket to any origin with its cookies, and
		// the socket's operations carry no CSRF token: an upgrade that
		// carries the session cookie must come from the server's own
		// pages, and say so (browsers always send Origin on upgrades).
		if _, err := r.Cookie(SessionCookie); err == nil && h.sessions != nil {
			origin := r.Header.Get("Origin")
			if origin == "" || !FromOwnOrigin(origin, r.Header.Get("Sec-Fetch-Site"), r.Host, r.TLS != nil) {
				NameRoute(r.Context(), "/graphql (websocket)")
				WriteError(w, r, failure.Forbidden("cross_site_request", "a WebSocket with the dashboard's session cookie must be opened from the dashboard's own origin"))
				return
			}
		}
		socket.ServeHTTP(w, r)
	})).Methods(http.MethodGet).HeadersRegexp("Upgrade", "(?i)^websocket$")
	root.Handle("/graphql/playground", named("/graphql/playground")).Methods(http.MethodGet)
	root.PathPrefix("/graphql/playground/assets/").Handler(named("/graphql/playground/assets")).Methods(http.MethodGet)
}
