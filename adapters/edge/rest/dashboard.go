package rest

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
)

// mountDashboard routes /dashboard and everything below it, every method,
// to h, which authenticates its requests itself (sign-in, sessions) and
// applies the failed-authentication budget to the client address it finds
// in the context.
func (s *server) mountDashboard(root *mux.Router, h http.Handler) {
	if h == nil {
		return
	}
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		infoFrom(r.Context()).route = dashboardRoute(r.URL.Path)
		h.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), clientAddress(r))))
	})
	root.Handle("/dashboard", named)
	root.PathPrefix("/dashboard/").Handler(named)
}

// dashboardRoute names a dashboard path for the request log and metrics,
// from a bounded set.
func dashboardRoute(path string) string {
	rest, _ := strings.CutPrefix(path, "/dashboard/")
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "assets", "sign-in", "sign-out":
		return "/dashboard/" + first
	}
	return "/dashboard/"
}
