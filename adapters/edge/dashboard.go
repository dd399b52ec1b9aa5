package edge

import (
	"net/http"
	"strings"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
)

// Pages are the routes of the dashboard: /dashboard and below. Their
// handlers authenticate requests themselves (sign-in, sessions) and apply
// the failed-authentication budget to the client address they find in the
// context (ratelimit.ClientFrom). The body rules of the API do not apply
// to them (see guardBody). around goes around every response below
// /dashboard, whichever route answers it (the dashboard's security
// headers).
func (h *Host) Pages(around func(http.Handler) http.Handler) *Routes {
	h.pages = around
	return &Routes{router: h.router, wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			NameRoute(r.Context(), dashboardRoute(r.URL.Path))
			next.ServeHTTP(w, r.WithContext(ratelimit.WithClient(r.Context(), ClientAddress(r))))
		})
	}}
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
