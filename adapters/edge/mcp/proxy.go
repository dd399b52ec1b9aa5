package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProxyOptions say which Switchboard server a Proxy serves, and as whom.
type ProxyOptions struct {
	// URL is the server's base URL (https://switchboard.example.com, or
	// http://127.0.0.1:8080 on this machine); the proxy talks to its /mcp.
	// CheckServerURL says which URLs are accepted.
	URL string
	// APIKey and APISecret are the account's credentials, sent with every
	// request as X-API-Key and X-API-Secret.
	APIKey, APISecret string
	// Transport carries the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Version is reported to both sides as the proxy's version.
	Version string
	Logger  *slog.Logger
}

// proxyKeepAlive is how often the proxy pings the server while its
// client is quiet, so that the server's session (and with it the
// resource subscriptions) does not end idle while a desktop client keeps
// the proxy open for hours.
const proxyKeepAlive = 5 * time.Minute

// Proxy serves over t (standard input and output, for a desktop client
// that starts local programs) the tools and resources of the Switchboard
// server at o.URL, by calling its /mcp over Streamable HTTP with the
// credentials: a call, a read or a subscription is passed on as it is,
// and the server's answers and notifications come back unchanged. A
// server session that ends (idle, or deleted on the server) is opened again, with
// its subscriptions. Proxy returns when the client goes (its input ends)
// or ctx ends; an error when the server cannot be reached at the start.
//
// The credentials go only to o.URL: Proxy refuses, before any connection,
// a URL that CheckServerURL refuses, and follows no redirect (a redirect
// is an error that names the origin it pointed to).
func Proxy(ctx context.Context, t sdk.Transport, o ProxyOptions) error {
	base, err := CheckServerURL(o.URL)
	if err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	next := o.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	// The local server, once it exists, receives the remote's update
	// notifications; they can only follow a subscription it made.
	var local atomic.Pointer[sdk.Server]
	r := &remote{
		endpoint:   base.JoinPath("mcp").Redacted(),
		httpClient: &http.Client{Transport: credentialHeaders{key: o.APIKey, secret: o.APISecret, next: next}},
		subscribed: map[string]bool{},
		client: sdk.NewClient(&sdk.Implementation{Name: "switchboard-mcp-proxy", Version: o.Version}, &sdk.ClientOptions{
			KeepAlive: proxyKeepAlive,
			ResourceUpdatedHandler: func(ctx context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				if s := local.Load(); s != nil {
					_ = s.ResourceUpdated(ctx, req.Params)
				}
			},
		}),
	}
	cs, err := r.session(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", r.endpoint, err)
	}
	defer r.close()

	init := cs.InitializeResult()
	server := sdk.NewServer(&sdk.Implementation{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version}, &sdk.ServerOptions{
		Instructions:       init.Instructions,
		Logger:             slog.New(atLeast{inner: o.Logger.Handler(), min: slog.LevelWarn}),
		Capabilities:       &sdk.ServerCapabilities{},
		SubscribeHandler:   r.subscribe,
		UnsubscribeHandler: r.unsubscribe,
	})
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", r.endpoint, err)
		}
		server.AddTool(tool, r.callTool)
	}
	for tmpl, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the resource templates of %s: %w", r.endpoint, err)
		}
		server.AddResourceTemplate(tmpl, r.readResource)
	}
	local.Store(server)
	return server.Run(ctx, t)
}

// CheckServerURL parses raw as the base URL of the Switchboard server a
// Proxy sends the credentials to, and refuses, with an error that never
// repeats a password, a URL that could let them leak: one that does not
// parse, one with a user name or password (user:password@), and one
// whose scheme is not https, except http to a loopback host (127.0.0.0/8,
// ::1, localhost).
func CheckServerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error repeats raw, password included.
		return nil, errors.New("the server URL does not parse as a URL: give it as https://host[:port][/path]")
	}
	if u.User != nil {
		return nil, errors.New("the server URL must not carry a user name or password (user:password@): the proxy authenticates with " +
			"SWITCHBOARD_API_KEY and SWITCHBOARD_API_SECRET")
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("the server URL %s has no host: give it as https://host[:port][/path]", u.Redacted())
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	case u.Scheme == "http":
		return nil, fmt.Errorf("the server URL %s is refused: the credentials would cross the network in the clear; use https://, "+
			"or http:// only to this machine (127.0.0.1, ::1, localhost)", u.Redacted())
	default:
		return nil, fmt.Errorf("the server URL %s is refused: its scheme must be https (or http to 127.0.0.1, ::1, localhost)", u.Redacted())
	}
	return u, nil
}

// loopback reports whether host names this machine: localhost or an
// address in 127.0.0.0/8 or ::1.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}

// credentialHeaders adds the account's credentials to every request, and
// turns a redirect into an error before the HTTP client could follow it,
// so that the credentials never reach another origin. The error names the
// origin the server pointed to, and nothing else of its Location (which
// may carry a password); the HTTP client wraps it with the request's URL,
// which CheckServerURL made sure carries none.
type credentialHeaders struct {
	key, secret string
	next        http.RoundTripper
}

func (c credentialHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("X-API-Secret", c.secret)
	resp, err := c.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return resp, err
	}
	_ = resp.Body.Close()
	to := "an unreadable Location"
	if loc, err := req.URL.Parse(resp.Header.Get("Location")); err == nil && loc.Host != "" {
		to = (&url.URL{Scheme: loc.Scheme, Host: loc.Host}).String()
	}
	return nil, fmt.Errorf("the server answered %d, a redirect to %s, which the proxy does not follow: it sends the credentials "+
		"only to its server URL (--url, SWITCHBOARD_URL); set that to the address the server redirects to if you trust it", resp.StatusCode, to)
}

// remote is the proxy's session with the server, opened again when the
// server forgot it.
type remote struct {
	endpoint   string
	httpClient *http.Client
	client     *sdk.Client

	mu      sync.Mutex
	current *sdk.ClientSession
	// subscribed are the resources the local client subscribed to, taken
	// again on a new session.
	subscribed map[string]bool
}

// session is the open session, opened when there is none.
func (r *remote) session(ctx context.Context) (*sdk.ClientSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return r.current, nil
	}
	cs, err := r.client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: r.endpoint, HTTPClient: r.httpClient}, nil)
	if err != nil {
		return nil, err
	}
	for uri := range r.subscribed {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			delete(r.subscribed, uri) // the thread is gone
		}
	}
	r.current = cs
	return cs, nil
}

// do runs fn on the session, and once more on a new one when the server
// no longer has it.
func (r *remote) do(ctx context.Context, fn func(*sdk.ClientSession) error) error {
	cs, err := r.session(ctx)
	if err != nil {
		return err
	}
	err = fn(cs)
	if !errors.Is(err, sdk.ErrSessionMissing) && !errors.Is(err, sdk.ErrConnectionClosed) {
		return err
	}
	r.mu.Lock()
	if r.current == cs {
		r.current = nil
		_ = cs.Close()
	}
	r.mu.Unlock()
	if cs, err = r.session(ctx); err != nil {
		return err
	}
	return fn(cs)
}

func (r *remote) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		_ = r.current.Close()
		r.current = nil
	}
}

func (r *remote) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var res *sdk.CallToolResult
	err := r.do(ctx, func(cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		return err
	})
	if err == nil {
		return res, nil
	}
	if jerr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return nil, jerr // the server's own protocol error
	}
	// The server could not be asked, or refused the request (429 past the
	// account's rate limit): the model may retry, so it hears of it as of
	// any failed call.
	e := toolError{Status: "error", Code: "unavailable", Message: "the Switchboard server did not answer: " + err.Error()}
	if strings.Contains(err.Error(), http.StatusText(http.StatusTooManyRequests)) {
		e.Code, e.Message, e.RetryAfterSeconds = "rate_limited", "rate limit exceeded for this account", 1
	}
	return toolErrorResult(e), nil
}

func (r *remote) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	var res *sdk.ReadResourceResult
	err := r.do(ctx, func(cs *sdk.ClientSession) error {
		var err error
		res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: req.Params.URI})
		return err
	})
	return res, passOn(err)
}

func (r *remote) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	err := r.do(ctx, func(cs *sdk.ClientSession) error {
		return cs.Subscribe(ctx, &sdk.SubscribeParams{URI: req.Params.URI})
	})
	if err == nil {
		r.mu.Lock()
		r.subscribed[req.Params.URI] = true
		r.mu.Unlock()
	}
	return passOn(err)
}

func (r *remote) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	r.mu.Lock()
	delete(r.subscribed, req.Params.URI)
	r.mu.Unlock()
	return passOn(r.do(ctx, func(cs *sdk.ClientSession) error {
		return cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: req.Params.URI})
	}))
}

// passOn answers the server's protocol errors as they were, and other
// failures as the proxy's own.
func passOn(err error) error {
	if err == nil {
		return nil
	}
	if jerr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return jerr
	}
	data, _ := json.Marshal(map[string]string{"error": err.Error()})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the Switchboard server did not answer", Data: data}
}
