// Package rest is the HTTP interface of Switchboard: the /v1 routes on
// gorilla/mux, their DTOs, authentication, limits, and the one table that
// turns domain failures into status codes and error bodies.
package rest

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// OpenAPIYAML is the REST contract. Every route is described there, and the
// tests validate every response they receive against it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// AccountUseCases is what the REST adapter needs from the account use cases.
type AccountUseCases interface {
	Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error)
	Overview(ctx context.Context, accountID string) (accounts.Overview, error)
	Rename(ctx context.Context, accountID, name string) (account.Account, error)
}

// Sessions resume the dashboard's browser sessions, so that the API
// accepts a session cookie in place of the API key headers;
// *sessions.Service implements it.
type Sessions interface {
	// Resume returns who the session of token acts as and moves its idle
	// timeout on. Unauthenticated when it is unknown, ended or its key
	// revoked.
	Resume(ctx context.Context, token string) (accounts.Principal, error)
}

var _ Sessions = (*sessions.Service)(nil)

// Limits bound what one client may ask of the server.
type Limits struct {
	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes int64
	// RatePerSecond and RateBurst bound each account's requests; 0 disables.
	RatePerSecond float64
	RateBurst     int
	// AuthFailuresPerMinute bounds failed authentications per client
	// address; further attempts get 429 until the budget refills. 0 disables.
	AuthFailuresPerMinute int
	// AuthFailuresIPv6Prefix is how many leading bits of an IPv6 client
	// address make one client for AuthFailuresPerMinute: a host is usually
	// given a whole /64, so its addresses share one budget. IPv4 addresses
	// count one by one. 0 means 64.
	AuthFailuresIPv6Prefix int
	// TrustedProxies are the peers whose X-Forwarded-For is believed for
	// the client address of the per-address limits and the request log
	// (see clientOf). Empty: every client is its peer address.
	TrustedProxies []netip.Prefix
	// RequestTimeout is every request's deadline, waiting for a database
	// connection included; past it the request answers 503 unavailable.
	// WebSocket connections are exempt (their operations are not).
	// 0 disables.
	RequestTimeout time.Duration
}

// AccountPolicy is the per-account request limit: RatePerSecond refills a
// burst of RateBurst.
func (l Limits) AccountPolicy() ratelimit.Policy {
	return ratelimit.Policy{Name: "account", PerSecond: l.RatePerSecond, Burst: max(l.RateBurst, 1)}
}

// AuthFailurePolicy is the budget of failed authentications (and, apart,
// of failed provider signatures) per client address: AuthFailuresPerMinute
// a minute, all of them at once.
func (l Limits) AuthFailurePolicy() ratelimit.Policy {
	return ratelimit.Policy{Name: "auth-failures", PerSecond: float64(l.AuthFailuresPerMinute) / 60, Burst: l.AuthFailuresPerMinute}
}

// RequestLimiter admits requests of a key (an account) within its budget;
// *ratelimit.Limiter implements it.
type RequestLimiter interface {
	Take(ctx context.Context, key string) ratelimit.Quota
}

// AttemptLimiter admits attempts from a client address while its failures
// stay within their budget; done reports whether the attempt failed.
// ratelimit.PerAddress implements it.
type AttemptLimiter interface {
	Attempt(ctx context.Context, addr string) (q ratelimit.Quota, done func(failed bool))
}

var (
	_ RequestLimiter = (*ratelimit.Limiter)(nil)
	_ AttemptLimiter = ratelimit.PerAddress{}
)

// Limiters hold the budgets of Limits. Replicas of one database share
// them when the composition root builds them over the database
// (NewLimiters); what is nil NewHandler fills with this process's own.
type Limiters struct {
	// Accounts limits each account's requests, and each agent number's
	// verified provider posts (keys "provider:<numberId>").
	Accounts RequestLimiter
	// AuthFailures limits failed API-key authentications per client
	// address, on every transport.
	AuthFailures AttemptLimiter
	// ProviderFailures limits failed provider signatures per client
	// address, apart from AuthFailures.
	ProviderFailures AttemptLimiter
}

// NewLimiters builds the limiters of l over buckets (ratelimit.NewMemoryBuckets
// for one process, the database for replicas).
func NewLimiters(l Limits, buckets ratelimit.Buckets, opts ratelimit.Options) Limiters {
	with := func(prefix string) ratelimit.Options {
		o := opts
		o.Prefix = prefix
		return o
	}
	return Limiters{
		Accounts:         ratelimit.New(l.AccountPolicy(), buckets, with("acct:")),
		AuthFailures:     ratelimit.PerAddress{Limiter: ratelimit.New(l.AuthFailurePolicy(), buckets, with("auth:")), IPv6Prefix: l.AuthFailuresIPv6Prefix},
		ProviderFailures: ratelimit.PerAddress{Limiter: ratelimit.New(l.AuthFailurePolicy(), buckets, with("sig:")), IPv6Prefix: l.AuthFailuresIPv6Prefix},
	}
}

// DefaultLimits are the limits when nothing is configured.
var DefaultLimits = Limits{MaxBodyBytes: 1 << 20, RatePerSecond: 100, RateBurst: 200, AuthFailuresPerMinute: 30, AuthFailuresIPv6Prefix: 64, RequestTimeout: 10 * time.Second}

// Deps is what the HTTP interface is built from.
type Deps struct {
	Accounts AccountUseCases
	// Messaging serves the send, lookup and sandbox routes when set.
	Messaging MessagingUseCases
	// Email serves the email routes when set.
	Email EmailUseCases
	// Cron serves the /cron-jobs routes when set.
	Cron CronUseCases
	// Webhooks serves the webhook settings, delivery log and polling
	// routes when set.
	Webhooks WebhookUseCases
	// Idempotency keeps Idempotency-Key responses; without it the header
	// is ignored.
	Idempotency idempotency.Store
	// IdempotencyLock is how long a request holds its Idempotency-Key
	// before a retry may take it over (its handler died): a little above
	// the request deadline. edge.DefaultIdempotencyLock when 0.
	IdempotencyLock time.Duration
	// Ready reports whether the service can take traffic (database reachable,
	// schema current); /readyz answers 503 with its error otherwise.
	Ready func(ctx context.Context) error
	// Providers, when set, serves the inbound routes the messaging
	// providers call (Telegram and WhatsApp webhooks).
	Providers ProviderWebhooks
	// GraphQL, when set, is served at /graphql behind the same authentication.
	GraphQL http.Handler
	// GraphQLPublic, when set, serves WebSocket upgrades of /graphql and
	// /graphql/playground without the REST authentication in front: it
	// authenticates WebSocket connections itself (connection_init).
	GraphQLPublic http.Handler
	// MCP, when set, is served at /mcp (GET, POST and DELETE: the Model
	// Context Protocol's Streamable HTTP transport) behind the same
	// authentication, limits and request log, with the API key headers
	// only (see mountMCP).
	MCP http.Handler
	// Sessions, when set, lets a browser signed in to the dashboard call
	// /v1 and /graphql with its session cookie (see authenticate), which
	// CSRF checks.
	Sessions Sessions
	CSRF     edge.CSRF
	// Dashboard, when set, is served at /dashboard/ (every method, every
	// path below it) with the request's client address in its context
	// (ratelimit.WithClient); it authenticates its requests itself.
	Dashboard http.Handler
	// Registry receives the HTTP metrics and is served at /metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	Limits   Limits
	// Limiters enforce Limits; see Limiters.
	Limiters Limiters
	// EmailDomain is the service's own email domain, shown on accounts.
	EmailDomain string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

type server struct {
	accounts  AccountUseCases
	sessions  Sessions
	csrf      edge.CSRF
	messaging MessagingUseCases
	providers ProviderWebhooks
	email     EmailUseCases
	cron      CronUseCases
	webhooks  WebhookUseCases
	// idempotency is the Idempotency-Key protocol over Deps.Idempotency.
	idempotency *edge.Idempotency
	now         func() time.Time
	ready       func(ctx context.Context) error
	log         *slog.Logger
	limits      Limits
	metrics     *httpMetrics
	limiters    Limiters
	emailDomain string
}

// NewHandler builds the whole HTTP interface.
func NewHandler(d Deps) (http.Handler, error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if p := d.Limits.AuthFailuresIPv6Prefix; p < 0 || p > 128 {
		return nil, fmt.Errorf("IPv6 prefix length for failed authentications must be 1 to 128, got %d", p)
	}
	if d.Limits.MaxBodyBytes <= 0 {
		d.Limits.MaxBodyBytes = DefaultLimits.MaxBodyBytes
	}
	s := &server{
		accounts: d.Accounts, sessions: d.Sessions, csrf: d.CSRF, messaging: d.Messaging, providers: d.Providers, email: d.Email, cron: d.Cron,
		webhooks: d.Webhooks, now: now,
		ready: d.Ready, log: d.Logger, limits: d.Limits,
		metrics:     newHTTPMetrics(d.Registry),
		emailDomain: d.EmailDomain,
	}
	if d.Idempotency != nil {
		s.idempotency = edge.NewIdempotency(d.Idempotency, d.IdempotencyLock, now, d.Logger)
	}
	s.limiters = d.Limiters
	if s.limiters.Accounts == nil || s.limiters.AuthFailures == nil || s.limiters.ProviderFailures == nil {
		own := NewLimiters(d.Limits, ratelimit.NewMemoryBuckets(), ratelimit.Options{Now: now, Logger: d.Logger})
		s.limiters.Accounts = cmp.Or(s.limiters.Accounts, own.Accounts)
		s.limiters.AuthFailures = cmp.Or(s.limiters.AuthFailures, own.AuthFailures)
		s.limiters.ProviderFailures = cmp.Or(s.limiters.ProviderFailures, own.ProviderFailures)
	}

	root := mux.NewRouter()
	root.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, &failure.Error{Kind: failure.KindNotFound, Code: "route_not_found", Message: "no route " + r.URL.Path})
	})
	top := &routes{router: root}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		top.Handle(m, "/healthz", s.healthz)
		top.Handle(m, "/readyz", s.readyz)
	}
	top.Handle(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}).ServeHTTP)
	top.Handle(http.MethodGet, "/v1/openapi.json", s.openapi)

	// The API's routes, sends first: mux tries routes in turn.
	api := &routes{router: root, prefix: "/v1", wrap: s.authenticate}
	s.mountMessaging(api)
	s.mountEmail(api)
	api.Handle(http.MethodGet, "/accounts/{accountId}", s.getAccount)
	api.Handle(http.MethodPatch, "/accounts/{accountId}", s.patchAccount)
	s.mountCron(api)
	s.mountWebhooks(api)
	s.mountProviders(top)

	s.mountGraphQLPublic(root, d.GraphQLPublic)
	s.mountDashboard(root, d.Dashboard)
	if d.GraphQL != nil {
		root.Handle("/graphql", s.authenticate(d.GraphQL)).Methods(http.MethodGet, http.MethodPost)
	}
	s.mountMCP(root, d.MCP)
	root.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allowedMethods(root, r), ", "))
		writeJSONError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed on "+r.URL.Path)
	})
	return s.observe(s.withDeadline(s.guardBody(root))), nil
}

// routes registers routes on one router, each for one method (a path
// known with another method answers 405 with Allow). Every route sits on
// the root router itself: in gorilla/mux v1.8.1, a method mismatch inside
// a subrouter is forgotten when a later route of it fails to match, and
// the request answered 404 instead of 405; so the API's routes carry their
// /v1 prefix and their authentication themselves rather than through a
// subrouter.
type routes struct {
	router *mux.Router
	prefix string
	// wrap, when set, goes around every handler (authentication).
	wrap func(http.Handler) http.Handler
}

// Handle registers h for method on path, below the prefix.
func (rt *routes) Handle(method, path string, h http.HandlerFunc) {
	var handler http.Handler = h
	if rt.wrap != nil {
		handler = rt.wrap(handler)
	}
	rt.router.Handle(rt.prefix+path, handler).Methods(method)
}

// allowedMethods are the methods of the routes whose path matches r's,
// for a 405's Allow header: mux reports a route that matches all but the
// method with ErrMethodMismatch.
func allowedMethods(root *mux.Router, r *http.Request) []string {
	var allowed []string
	_ = root.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		var match mux.RouteMatch
		if route.Match(r, &match) || match.MatchErr == mux.ErrMethodMismatch {
			methods, _ := route.GetMethods()
			allowed = append(allowed, methods...)
		}
		return nil
	})
	slices.Sort(allowed)
	return slices.Compact(allowed)
}

// writeJSONError answers a status that has no domain kind (405) in the
// route's error shape.
func writeJSONError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	if styleOf(r) == styleCron {
		writeJSON(w, status, cronErrorBody{Error: cronError{Code: code, Message: message, Details: map[string][]string{}}})
		return
	}
	writeJSON(w, status, flatError{Detail: message, Status: "error", Message: message, Code: code})
}

// openAPIJSON is the embedded document as JSON, made on the first request
// for it: loading it costs a process more than the rest of its start.
// (Tests check the document itself.)
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	return json.Marshal(doc)
})

func (s *server) openapi(w http.ResponseWriter, r *http.Request) {
	infoFrom(r.Context()).route = "/v1/openapi.json"
	doc, err := openAPIJSON()
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(doc)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	infoFrom(r.Context()).route = "/healthz"
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	infoFrom(r.Context()).route = "/readyz"
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			// Not logged: the health watcher logs an outage once, and a
			// load balancer asks every few hundred milliseconds.
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
