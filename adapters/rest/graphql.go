package rest

import (
	"net/http"

	"github.com/switchboard-dev/switchboard/application/ratelimit"

	"github.com/gorilla/mux"
)

// mountGraphQLPublic routes to h, ahead of the authenticated /graphql
// route, the GraphQL requests that authenticate otherwise: WebSocket
// upgrades of /graphql (credentials in connection_init) and the playground
// page.
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
	root.Handle("/graphql", named("/graphql (websocket)")).Methods(http.MethodGet).HeadersRegexp("Upgrade", "(?i)^websocket$")
	root.Handle("/graphql/playground", named("/graphql/playground")).Methods(http.MethodGet)
	root.PathPrefix("/graphql/playground/assets/").Handler(named("/graphql/playground/assets")).Methods(http.MethodGet)
}
