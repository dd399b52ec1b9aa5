package edge

import (
	"net/http"
	"strings"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
)

// MountDashboard routes /dashboard and everything below it, every method,
// to handler, which authenticates its requests itself (sign-in, sessions) and
// applies the failed-authentication budget to the client address it finds
// in the context.
func (h *Host) MountDashboard(handler http.Handler) {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NameRoute(r.Context(), dashboardRoute(r.URL.Path))
		handler.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), ClientAddress(r))))
	})
	h.router.Handle("/dashboard", named)
	h.router.PathPrefix("/dashboard/").Handler(named)
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
