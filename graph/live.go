package graph

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// LiveFeed hands out the account's message events as they are committed;
// *messaging.Live implements it.
type LiveFeed interface {
	// Subscribe returns the account's message events from now on and a
	// function that ends the subscription; the channel closes when it
	// ends.
	Subscribe(ctx context.Context, accountID string) (<-chan appmessaging.LiveUpdate, func(), error)
}

var _ LiveFeed = (*appmessaging.Live)(nil)

// Authenticator checks API credentials, as the edge's authentication does;
// *accounts.Service implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error)
}

var _ Authenticator = (*accounts.Service)(nil)

// Sessions resume the dashboard's browser sessions, for sockets opened
// with the session cookie; *sessions.Service implements them.
type Sessions interface {
	// Resume returns who the session of token acts as and moves its idle
	// timeout on (opening a socket is a use of the session).
	Resume(ctx context.Context, token string) (accounts.Principal, error)
	// Check is Resume without moving the idle timeout on: an open
	// socket checking that its session still holds.
	Check(ctx context.Context, token string) (accounts.Principal, error)
}

var _ Sessions = (*sessions.Service)(nil)

// follow streams the account's messages of events of type typ, of one
// thread when threadID is set, until the subscription ends.
func (r *Resolver) follow(ctx context.Context, typ event.Type, threadID *string) (<-chan *messaging.Message, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if r.hub == nil {
		return nil, &failure.Error{Kind: failure.KindNotImplemented, Code: "subscriptions_unavailable", Message: "live subscriptions are not configured"}
	}
	thread := ""
	if threadID != nil {
		found, err := r.threads.Threads(ctx, p.AccountID, []string{*threadID})
		if err != nil {
			return nil, err
		}
		if _, ok := found[*threadID]; !ok {
			return nil, failure.NotFound("thread")
		}
		thread = *threadID
	}
	return r.hub.subscribe(ctx, p.AccountID, typ, thread)
}

// PublicOptions configure the routes served without the REST
// authentication in front.
type PublicOptions struct {
	// Playground serves the GraphiQL page at /graphql/playground.
	Playground bool
	// OperationTimeout is the deadline of each query and mutation on a
	// WebSocket, as HTTP requests have theirs; subscriptions live as long
	// as their socket. 0: none.
	OperationTimeout time.Duration
	// CredentialRecheck is how often a socket's credentials are checked
	// again, so that a revoked key ends its subscriptions and operations;
	// DefaultCredentialRecheck when 0.
	CredentialRecheck time.Duration
	// MaxSocketsPerAccount bounds the sockets one account holds open on
	// this process; DefaultSocketsPerAccount when 0. One more is closed
	// with 4429.
	MaxSocketsPerAccount int
	// Limits are the HTTP interface's budgets, applied to sockets too;
	// nil fields limit nothing.
	Limits SocketLimits
	// Sessions, when set, authenticate a socket whose connection_init
	// carries no credentials with the session cookie of its upgrade (a
	// browser signed in to the dashboard). The REST adapter in front has
	// checked that such an upgrade comes from the server's own origin.
	Sessions Sessions
}

// SocketLimits hold a WebSocket to the rules of an HTTP request: each
// connection is an authentication attempt of its client address, and
// each operation on it (query, mutation, subscription start) spends one
// of its account's request tokens. The edge's limiters implement
// them, so both transports draw on one budget.
type SocketLimits struct {
	AuthFailures interface {
		Attempt(ctx context.Context, addr string) (ratelimit.Quota, func(failed bool))
	}
	Operations RequestBudget
}

// RequestBudget spends an account's request tokens; the edge's
// account limiter implements it.
type RequestBudget interface {
	Take(ctx context.Context, key string) ratelimit.Quota
}

// attempt starts an authentication attempt of the socket's client, or
// refuses it; the attempt's outcome goes to the returned function, once.
func (l SocketLimits) attempt(ctx context.Context) (ratelimit.Quota, func(failed bool)) {
	if l.AuthFailures == nil {
		return ratelimit.Quota{}, func(bool) {}
	}
	q, done := l.AuthFailures.Attempt(ctx, ratelimit.ClientFrom(ctx))
	var once sync.Once
	return q, func(failed bool) { once.Do(func() { done(failed) }) }
}

func (l SocketLimits) operation(ctx context.Context, accountID string) ratelimit.Quota {
	if l.Operations == nil {
		return ratelimit.Quota{}
	}
	return l.Operations.Take(ctx, accountID)
}

// DefaultCredentialRecheck, with the accounts' revocation watcher (which
// looks twice a second), ends a revoked key's sockets within a second.
const DefaultCredentialRecheck = 500 * time.Millisecond

func (o PublicOptions) credentialRecheck() time.Duration {
	if o.CredentialRecheck > 0 {
		return o.CredentialRecheck
	}
	return DefaultCredentialRecheck
}

// recheckCredentials checks a socket's credentials every interval until
// ctx ends, and ends the socket (cancel) once they are refused. A check
// that fails for another reason (the database away) leaves the socket
// open: an outage is no reason to drop every subscriber. Checks are
// answered by the auth cache, which forgets revoked keys.
func recheckCredentials(ctx context.Context, cancel context.CancelFunc, interval time.Duration, check func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := check(ctx); failure.Is(err, failure.KindUnauthenticated) {
			cancel()
			return
		}
	}
}

// NewPublicHandler serves what cannot sit behind the edge's authentication
// middleware: WebSocket connections to /graphql (graphql-transport-ws; a
// browser cannot set headers on the upgrade, so the credentials come in
// the connection_init payload, or else from the upgrade's headers, or
// else from its dashboard session cookie) and,
// when enabled, the playground page at /graphql/playground. The edge's
// host routes to each (edge.Host.MountGraphQL).
func NewPublicHandler(r *Resolver, auth Authenticator, opts PublicOptions) edge.GraphQLPublic {
	srv := newServer(r)
	// Registered first, so it runs first: a refused operation costs nothing
	// more.
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		p, err := principal(ctx)
		if err != nil {
			return next(ctx)
		}
		if q := opts.Limits.operation(ctx, p.AccountID); !q.Admitted() {
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{
				presentError(ctx, failure.RateLimited("rate limit exceeded for this account", q.RetryAfter)),
			}})
		}
		return next(ctx)
	})
	if opts.OperationTimeout > 0 {
		srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			if graphql.GetOperationContext(ctx).Operation.Operation == ast.Subscription {
				return next(ctx)
			}
			deadline := time.Now().Add(opts.OperationTimeout)
			ctx, cancel := context.WithDeadline(ctx, deadline)
			handle := next(ctx)
			return func(ctx context.Context) *graphql.Response {
				defer cancel()
				ctx, end := context.WithDeadline(ctx, deadline)
				defer end()
				return handle(ctx)
			}
		})
	}
	sockets := newSocketCounts(opts.MaxSocketsPerAccount)
	srv.AddTransport(&transport.Websocket{
		Implementation:        guardedSockets{inner: transport.CoderWebsocketImplementation{}},
		KeepAlivePingInterval: 15 * time.Second,
		InitTimeout:           10 * time.Second,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			key, secret := initCredentials(payload, upgradeHeaders(ctx))
			check := func(ctx context.Context) (accounts.Principal, error) {
				return auth.Authenticate(ctx, key, secret, false)
			}
			var p accounts.Principal
			var err error
			if token := sessionToken(upgradeHeaders(ctx)); key == "" && token != "" && opts.Sessions != nil {
				// As on REST, a refused session token is no failed
				// authentication: there is nothing to guess.
				attemptDone(ctx)(false)
				p, err = opts.Sessions.Resume(ctx, token)
				check = func(ctx context.Context) (accounts.Principal, error) { return opts.Sessions.Check(ctx, token) }
			} else {
				p, err = check(ctx)
				attemptDone(ctx)(failure.Is(err, failure.KindUnauthenticated))
			}
			if err != nil {
				// The close code tells graphql-transport-ws clients whether
				// to reconnect: 4403 (forbidden) stops them, where the
				// normal closure gqlgen sends by default made the standard
				// client retry thousands of times a minute; an outage's
				// 1013 (try again later) lets them retry.
				fe := failure.As(err)
				switch fe.Kind {
				case failure.KindInternal:
					return closing(ctx, websocketTryAgainLater, "try again later"), nil, errors.New("internal server error")
				case failure.KindUnavailable:
					return closing(ctx, websocketTryAgainLater, "try again later"), nil, errors.New(fe.Message)
				}
				return closing(ctx, websocketForbidden, "Forbidden"), nil, errors.New(fe.Message)
			}
			if !sockets.open(ctx, p.AccountID) {
				return closing(ctx, websocketTooManySockets, "too many sockets"), nil,
					errors.New("this account has " + strconv.Itoa(sockets.max) + " WebSockets open on this server; close one first")
			}
			ctx, cancel := context.WithCancel(withSocket(accounts.WithPrincipal(ctx, p)))
			// Sent as the connection_error of a socket ended below (or
			// by the server stopping).
			ctx = transport.AppendCloseReason(ctx, "the connection's credentials are no longer valid, or the server stopped")
			go recheckCredentials(ctx, cancel, opts.credentialRecheck(), func(ctx context.Context) error {
				_, err := check(ctx)
				return err
			})
			return ctx, nil, nil
		},
	})
	public := edge.GraphQLPublic{Socket: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "only WebSocket upgrades are served here", http.StatusBadRequest)
			return
		}
		// The upgrade is the authentication attempt: a client past its
		// budget of failures gets 429 before a socket is even opened.
		attempt, done := opts.Limits.attempt(req.Context())
		if !attempt.Admitted() {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(attempt.RetryAfter.Seconds()))))
			http.Error(w, "too many failed authentication attempts from this address", http.StatusTooManyRequests)
			return
		}
		// A socket that never sends connection_init failed nothing.
		defer done(false)
		ctx := context.WithValue(req.Context(), upgradeHeadersKey{}, req.Header)
		closeAccepted(w, req.WithContext(context.WithValue(ctx, attemptKey{}, done)), srv)
	})}
	if opts.Playground {
		public.Playground, public.PlaygroundAssets = playgroundPage(), playgroundAssets()
	}
	return public
}

// WebSocket close codes: graphql-transport-ws's Forbidden and Too Many
// Initialisation Requests, and RFC 6455's Try Again Later.
const (
	websocketForbidden     = 4403
	websocketTryAgainLater = 1013
	// websocketTooManySockets is graphql-transport-ws's code for too many
	// initialisations, which its clients do not retry at once.
	websocketTooManySockets = 4429
)

// closing marks ctx so that gqlgen closes the socket with code and reason.
func closing(ctx context.Context, code int, reason string) context.Context {
	return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, code), reason)
}

type upgradeHeadersKey struct{}

// attemptKey carries the socket's authentication attempt to its
// connection_init.
type attemptKey struct{}

func attemptDone(ctx context.Context) func(failed bool) {
	if done, ok := ctx.Value(attemptKey{}).(func(failed bool)); ok {
		return done
	}
	return func(bool) {}
}

func upgradeHeaders(ctx context.Context) http.Header {
	h, _ := ctx.Value(upgradeHeadersKey{}).(http.Header)
	return h
}

// sessionToken is the dashboard session token in the upgrade's cookie, or
// "".
func sessionToken(h http.Header) string {
	if h == nil {
		return ""
	}
	c, err := (&http.Request{Header: h}).Cookie(edge.SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// initCredentials reads the API key and secret from a connection_init
// payload: the header names as keys ("X-API-Key", "X-API-Secret", any
// case), possibly under "headers"; when the payload has no key, from the
// upgrade request's headers. A bearer key is no credential here: the key
// alone authenticates only the cron routes (see the edge's authentication), so an
// Authorization header is ignored and the socket is refused like one that
// carries nothing.
func initCredentials(payload transport.InitPayload, h http.Header) (key, secret string) {
	fields := map[string]string{}
	collect := func(m map[string]any) {
		for k, v := range m {
			if s, ok := v.(string); ok {
				fields[strings.ToLower(k)] = s
			}
		}
	}
	collect(payload)
	if nested, ok := payload["headers"].(map[string]any); ok {
		collect(nested)
	}
	key, secret = fields["x-api-key"], fields["x-api-secret"]
	if key == "" && h != nil {
		key, secret = h.Get("X-API-Key"), h.Get("X-API-Secret")
	}
	return key, secret
}
