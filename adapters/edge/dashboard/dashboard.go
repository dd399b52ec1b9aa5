// Package dashboard is the web console at /dashboard/: sign-in with an
// account's API key and secret, server-side sessions in an HttpOnly
// cookie, sign-out, and the shell page the console's script (embedded
// under assets/) runs in. The console reads and changes data through the
// public APIs (/graphql, /v1), which accept the session cookie with its
// CSRF token (adapters/edge/rest, graph); this package serves no data itself.
//
// Every response carries a strict Content-Security-Policy (no inline
// script or style, nothing from another host, no framing) and
// X-Content-Type-Options, Referrer-Policy; HTML is never cached.
package dashboard

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// Sessions sign browsers in and out and resume their sessions;
// *sessions.Service implements them.
type Sessions interface {
	// SignIn checks an API key and secret and starts a session.
	// Unauthenticated when they are wrong.
	SignIn(ctx context.Context, key, secret string) (sessions.Issued, error)
	// Resume returns who the session of token acts as and moves its idle
	// timeout on. Unauthenticated when it is unknown, ended or its key
	// revoked.
	Resume(ctx context.Context, token string) (accounts.Principal, error)
	// SignOut ends the session of token.
	SignOut(ctx context.Context, token string) error
}

var _ Sessions = (*sessions.Service)(nil)

// Accounts read the signed-in account; *accounts.Service implements them.
type Accounts interface {
	Account(ctx context.Context, id string) (account.Account, error)
}

var _ Accounts = (*accounts.Service)(nil)

// AttemptLimiter admits sign-in attempts from a client address while its
// failed authentications stay within their budget; done reports whether
// the attempt failed. The edge's failed-authentication limiter
// implements it, so sign-in and the APIs share one budget.
type AttemptLimiter interface {
	Attempt(ctx context.Context, addr string) (q ratelimit.Quota, done func(failed bool))
}

// Deps are what the dashboard is built from.
type Deps struct {
	Sessions Sessions
	// CSRF derives the sessions' CSRF tokens and checks them.
	CSRF     edge.CSRF
	Accounts Accounts
	// AuthFailures limits failed sign-ins per client address; nil limits
	// nothing. The address is the one the edge's host in front records
	// (ratelimit.WithClient), else the connection's peer.
	AuthFailures AttemptLimiter
	// TrustedProxies are the peers whose X-Forwarded-Proto is believed:
	// a request they forward as https gets a Secure cookie, as one that
	// arrives over TLS does.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
}

// Base is where the dashboard is mounted.
const Base = "/dashboard/"

// Mount serves the dashboard on host: every path below /dashboard/.
func Mount(host *edge.Host, d Deps) error {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	assets, err := loadAssets()
	if err != nil {
		return err
	}
	pages, err := parseTemplates(assets)
	if err != nil {
		return err
	}
	h := &handler{deps: d, assets: assets, pages: pages}
	routes := host.Pages(secure)
	// A GET route takes HEAD too; routes are tried in turn, the catch-all
	// that answers any other method last.
	get := []string{http.MethodGet, http.MethodHead}
	for _, m := range get {
		routes.Handle(m, "/dashboard", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, Base, http.StatusPermanentRedirect)
		})
		routes.Handle(m, "/dashboard/sign-in", h.signInPage)
	}
	routes.Handle(http.MethodPost, "/dashboard/sign-in", h.signIn)
	routes.Handle(http.MethodPost, "/dashboard/sign-out", h.signOut)
	routes.HandlePrefix("/dashboard/assets/", assets, get...)
	routes.HandlePrefix("/dashboard/", http.HandlerFunc(h.shell), get...)
	notAllowed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, http.StatusMethodNotAllowed, "This page does not take "+r.Method+" requests.")
	})
	routes.HandlePrefix("/dashboard/", notAllowed)
	routes.Handle("", "/dashboard", notAllowed)
	return nil
}

type handler struct {
	deps   Deps
	assets *assetServer
	pages  *templates
}

// clientAddress is the address r counts against the failed-authentication
// budget as.
func clientAddress(r *http.Request) string {
	if addr := ratelimit.ClientFrom(r.Context()); addr != "" {
		return addr
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// overTLS reports whether the browser reached the server over TLS: to
// this server, or to a trusted proxy that says so.
func (h *handler) overTLS(r *http.Request) bool {
	return edge.ForwardedTLS(r, h.deps.TrustedProxies)
}

// fromOwnOrigin reports whether the browser says r comes from the
// dashboard's own pages (edge.FromOwnOrigin).
func fromOwnOrigin(r *http.Request) bool {
	return edge.FromOwnOrigin(r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Host, r.TLS != nil)
}
