package edge

import (
	"net/http"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// GraphQLPublic are the GraphQL handlers that authenticate otherwise than
// the API's routes. A nil handler is not mounted.
type GraphQLPublic struct {
	// Socket serves WebSocket upgrades of /graphql: credentials come in
	// connection_init, or from the session cookie of the upgrade.
	Socket http.Handler
	// Playground serves the playground page at /graphql/playground, and
	// PlaygroundAssets its files below /graphql/playground/assets/.
	Playground, PlaygroundAssets http.Handler
}

// MountGraphQL routes /graphql (GET and POST) to authenticated behind the
// API's authentication and limits, and, ahead of that, the requests of
// public.
func (h *Host) MountGraphQL(authenticated http.Handler, public GraphQLPublic) {
	if public.Socket != nil {
		h.mountGraphQLSocket(public.Socket)
	}
	if public.Playground != nil {
		h.router.Handle("/graphql/playground", h.withClient("/graphql/playground", public.Playground)).Methods(http.MethodGet)
	}
	if public.PlaygroundAssets != nil {
		h.router.PathPrefix("/graphql/playground/assets/").Handler(h.withClient("/graphql/playground/assets", public.PlaygroundAssets)).Methods(http.MethodGet)
	}
	h.router.Handle("/graphql", h.authenticate(authenticated)).Methods(http.MethodGet, http.MethodPost)
}

// withClient names the route of next's requests and records their client
// address in the context (ratelimit.WithClient), for a handler that
// authenticates its requests itself.
func (h *Host) withClient(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NameRoute(r.Context(), route)
		next.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), ClientAddress(r))))
	})
}

func (h *Host) mountGraphQLSocket(handler http.Handler) {
	root := h.router
	// The socket's own authentication counts against the same client
	// address as a request's.
	socket := h.withClient("/graphql (websocket)", handler)
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
}
