package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/dashboard"
	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testBundle is the dashboard over the real use cases and a fresh
// database, served by a real HTTP server.
type testBundle struct {
	srv      *httptest.Server
	client   *http.Client
	clock    *clock
	accounts *accounts.Service
	sessions *sessions.Service
	csrf     edge.CSRF
	account  account.Account
	key      string
	secret   string
	keyID    string
}

type options struct {
	tls            bool
	authFailures   int
	trustedProxies []netip.Prefix
}

func setup(t *testing.T, dialect store.Dialect, o options) *testBundle {
	t.Helper()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	c := &clock{now: time.Now()}
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	sess := sessions.NewService(db.SessionStore(), acc, keys, sessions.Options{IdleTimeout: 30 * time.Minute, MaxAge: 12 * time.Hour, Now: c.Now})
	a, cred, err := acc.CreateAccount(context.Background(), "Acme <Ops> & Co")
	require.NoError(t, err)
	d := dashboard.Deps{Sessions: sess, CSRF: edge.NewCSRF(keys), Accounts: acc, TrustedProxies: o.trustedProxies, Logger: slog.New(slog.DiscardHandler)}
	if o.authFailures > 0 {
		policy := ratelimit.Policy{Name: "auth-failures", PerSecond: float64(o.authFailures) / 60, Burst: o.authFailures}
		d.AuthFailures = ratelimit.PerAddress{Limiter: ratelimit.New(policy, ratelimit.NewMemoryBuckets(), ratelimit.Options{})}
	}
	host, err := edge.New(edge.Deps{Logger: slog.New(slog.DiscardHandler), Limits: edge.Limits{TrustedProxies: o.trustedProxies}})
	require.NoError(t, err)
	require.NoError(t, dashboard.Mount(host, d))
	srv := httptest.NewUnstartedServer(host.Handler())
	if o.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &testBundle{
		srv: srv, client: client, clock: c, accounts: acc, sessions: sess, csrf: d.CSRF,
		account: a, key: cred.Key, secret: cred.Secret, keyID: cred.Credential.ID,
	}
}

type response struct {
	*http.Response
	body string
}

// do sends a request as the dashboard's own pages would (same Origin on
// posts), with headers given as name, value pairs.
func (b *testBundle) do(t *testing.T, method, path string, form url.Values, headers ...string) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	requireSecurityHeaders(t, resp, method+" "+path)
	return response{Response: resp, body: string(raw)}
}

// signIn posts the form and returns the session cookie set.
func (b *testBundle) signIn(t *testing.T) *http.Cookie {
	t.Helper()
	r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body: %s", r.body)
	require.Equal(t, "/dashboard/", r.Header.Get("Location"))
	c := sessionCookie(t, r.Response)
	require.NotEmpty(t, c.Value)
	return c
}

func sessionCookie(t *testing.T, r *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range r.Cookies() {
		if c.Name == edge.SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", edge.SessionCookie, r.Header.Values("Set-Cookie"))
	return nil
}

func withCookie(c *http.Cookie) []string { return []string{"Cookie", c.Name + "=" + c.Value} }

// requireSecurityHeaders holds every dashboard response to the policy.
func requireSecurityHeaders(t *testing.T, r *http.Response, what string) {
	t.Helper()
	require.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
		r.Header.Get("Content-Security-Policy"), what)
	require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"), what)
	require.Equal(t, "same-origin", r.Header.Get("Referrer-Policy"), what)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"), what)
	}
}

var (
	scriptTag      = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inlineHandler  = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	inlineStyleTag = regexp.MustCompile(`(?i)<style\b|\sstyle\s*=`)
)

// requireNoInlineCode checks a page for inline script and style, which
// the policy would block anyway.
func requireNoInlineCode(t *testing.T, page string) {
	t.Helper()
	scripts := scriptTag.FindAllStringSubmatch(page, -1)
	require.NotEmpty(t, scripts)
	for _, s := range scripts {
		require.Contains(t, s[1], `src="/dashboard/assets/`, "scripts are files of the dashboard")
		require.Empty(t, strings.TrimSpace(s[2]), "no inline script")
	}
	require.False(t, inlineHandler.MatchString(page), "no inline event handlers")
	require.False(t, inlineStyleTag.MatchString(page), "no inline styles")
}

func TestSignInShowsTheAccount(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, options{})
		r := b.do(t, http.MethodGet, "/dashboard/", nil)
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.Equal(t, "/dashboard/sign-in", r.Header.Get("Location"))

		r = b.do(t, http.MethodGet, "/dashboard/sign-in", nil)
		require.Equal(t, http.StatusOK, r.StatusCode)
		for _, want := range []string{
			`<form method="post" action="/dashboard/sign-in">`,
			`<label for="api_key">`, `id="api_key" name="api_key"`,
			`<label for="api_secret">`, `id="api_secret" name="api_secret" type="password"`,
			`<button type="submit">Sign in</button>`,
		} {
			require.Contains(t, r.body, want)
		}
		requireNoInlineCode(t, r.body)

		c := b.signIn(t)
		require.True(t, c.HttpOnly, "HttpOnly")
		require.Equal(t, http.SameSiteLaxMode, c.SameSite)
		require.Equal(t, "/", c.Path, "the APIs get the cookie too")
		require.False(t, c.Secure, "not Secure over plain HTTP, or the browser would drop it")
		require.Equal(t, int((12 * time.Hour).Seconds()), c.MaxAge, "the cookie lives no longer than the session may")

		r = b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.body)
		require.Contains(t, r.body, b.account.ID)
		require.Contains(t, r.body, "Acme &lt;Ops&gt; &amp; Co", "the name, escaped")
		require.NotContains(t, r.body, "<Ops>")
		for _, word := range []string{">Overview<", ">Threads<", ">Webhook<", ">Cron<", ">Email<"} {
			require.Contains(t, r.body, word)
		}
		csrf := b.csrf.Token(c.Value)
		require.Contains(t, r.body, `<meta name="csrf-token" content="`+csrf+`">`)
		require.Regexp(t, `<script type="module" src="/dashboard/assets/app\.js\?v=[0-9a-f]+"></script>`, r.body)
		require.Regexp(t, `<link rel="stylesheet" href="/dashboard/assets/app\.css\?v=[0-9a-f]+">`, r.body)
		require.Contains(t, r.body, `<form class="sign-out" method="post" action="/dashboard/sign-out">`)
		require.Contains(t, r.body, `name="csrf_token" value="`+csrf+`"`)
		require.Contains(t, r.body, `<a href="/dashboard/" aria-current="page">Overview</a>`)
		requireNoInlineCode(t, r.body)

		for _, page := range []string{"threads", "webhook", "cron", "email", "threads/thr_123"} {
			r = b.do(t, http.MethodGet, "/dashboard/"+page, nil, withCookie(c)...)
			require.Equal(t, http.StatusOK, r.StatusCode, page)
			first, _, _ := strings.Cut(page, "/")
			require.Contains(t, r.body, `href="/dashboard/`+first+`" aria-current="page"`, page)
			require.Contains(t, r.body, b.account.ID)
		}
		r = b.do(t, http.MethodGet, "/dashboard/nonsense", nil, withCookie(c)...)
		require.Equal(t, http.StatusNotFound, r.StatusCode)

		r = b.do(t, http.MethodGet, "/dashboard/sign-in", nil, withCookie(c)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "a signed-in browser goes to the console")
		require.Equal(t, "/dashboard/", r.Header.Get("Location"))
	})
}

// After sign-in the browser goes back to the page it asked for, and only
// to a page of the console.
func TestSignInReturnsToTheConsolePageAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{})
	r := b.do(t, http.MethodGet, "/dashboard/cron", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/dashboard/sign-in?next=%2Fdashboard%2Fcron", r.Header.Get("Location"))
	r = b.do(t, http.MethodGet, "/dashboard/sign-in?next=%2Fdashboard%2Fcron", nil)
	require.Contains(t, r.body, `<input type="hidden" name="next" value="/dashboard/cron">`)

	for next, want := range map[string]string{
		"/dashboard/cron": "/dashboard/cron", "/dashboard/threads/thr_1": "/dashboard/threads/thr_1",
		"//evil.example/": "/dashboard/", "https://evil.example/dashboard/": "/dashboard/",
		"/dashboard//evil.example": "/dashboard/", "/dashboard/../v1": "/dashboard/", "/dashboard/nonsense": "/dashboard/",
		"/dashboard/cron\\x": "/dashboard/",
	} {
		r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.Equal(t, want, r.Header.Get("Location"), "next %q", next)
	}
}

// A wrong secret shows the form again with an error and counts toward
// the address's failed-authentication budget; past it even the right
// secret is refused, as on the APIs.
func TestWrongSecretCountsTowardTheLimit(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, options{authFailures: 3})
		for range 3 {
			r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret + "x"}})
			require.Equal(t, http.StatusUnauthorized, r.StatusCode)
			require.Contains(t, r.body, `role="alert">The API key or secret is wrong`)
			require.Contains(t, r.body, `name="api_key" type="text" value="`+b.key+`"`, "the key is kept, the secret is not")
			require.Contains(t, r.body, `aria-invalid="true"`)
			require.Empty(t, r.Cookies(), "no session")
		}
		r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret}})
		require.Equal(t, http.StatusTooManyRequests, r.StatusCode)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
		require.Contains(t, r.body, "Too many failed sign-ins")
		require.Empty(t, r.Cookies())
	})
}

// Signing in again ends the browser's session before; a form too large
// for a sign-in is refused with a page.
func TestSignInAgainAndLargeForms(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{})
	first := b.signIn(t)
	r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret}}, withCookie(first)...)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	second := sessionCookie(t, r.Response)
	require.NotEqual(t, first.Value, second.Value, "a new session, never the old token")
	require.Equal(t, http.StatusSeeOther, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(first)...).StatusCode, "the session before ended")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(second)...).StatusCode)

	r = b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {strings.Repeat("k", 64<<10)}, "api_secret": {b.secret}})
	require.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "text/html")
}

// Successful sign-ins spend nothing of the budget.
func TestRightSecretsSpendNoBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{authFailures: 2})
	for range 5 {
		b.signIn(t)
	}
}

func TestEndedAndForgedSessionsGoToSignIn(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, options{})
		c := b.signIn(t)
		flipped := []byte(c.Value)
		flipped[7] ^= 4
		for name, value := range map[string]string{"tampered": string(flipped), "garbage": "<script>", "empty": ""} {
			r := b.do(t, http.MethodGet, "/dashboard/threads", nil, "Cookie", edge.SessionCookie+"="+value)
			require.Equal(t, http.StatusSeeOther, r.StatusCode, name)
			require.Equal(t, "/dashboard/sign-in?next=%2Fdashboard%2Fthreads", r.Header.Get("Location"), name)
		}

		b.clock.Advance(29 * time.Minute)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode, "used within the idle timeout")
		b.clock.Advance(29 * time.Minute)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode, "the use moved it on")
		b.clock.Advance(31 * time.Minute)
		r := b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "idle for longer than the timeout")
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/sign-in", nil, withCookie(c)...).StatusCode,
			"an ended session gets the form")
	})
}

func TestRevokingTheKeyEndsItsSessions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, options{})
		c := b.signIn(t)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode)
		_, err := b.accounts.RevokeCredential(context.Background(), b.account.ID, b.keyID)
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode)
		r := b.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {b.key}, "api_secret": {b.secret}})
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "a revoked key cannot sign in")
	})
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, options{})
		c, other := b.signIn(t), b.signIn(t)
		csrf := b.csrf.Token(c.Value)

		r := b.do(t, http.MethodPost, "/dashboard/sign-out", url.Values{}, withCookie(c)...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "no CSRF token")
		r = b.do(t, http.MethodPost, "/dashboard/sign-out", url.Values{"csrf_token": {b.csrf.Token(other.Value)}}, withCookie(c)...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "another session's CSRF token")
		r = b.do(t, http.MethodPost, "/dashboard/sign-out", url.Values{"csrf_token": {csrf}}, append(withCookie(c), "Origin", "http://evil.example")...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "from another site")
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode, "still signed in")

		r = b.do(t, http.MethodPost, "/dashboard/sign-out", url.Values{"csrf_token": {csrf}}, withCookie(c)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "body: %s", r.body)
		require.Equal(t, "/dashboard/sign-in", r.Header.Get("Location"))
		cleared := sessionCookie(t, r.Response)
		require.Empty(t, cleared.Value)
		require.Negative(t, cleared.MaxAge, "the cookie is deleted (Max-Age=0)")
		require.Equal(t, http.StatusSeeOther, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(c)...).StatusCode, "the session ended")
		_, err := b.sessions.Resume(context.Background(), c.Value)
		require.Error(t, err, "on the server, not only in the browser")
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/dashboard/", nil, withCookie(other)...).StatusCode, "other sessions go on")

		r = b.do(t, http.MethodPost, "/dashboard/sign-out", nil, append(withCookie(other), edge.CSRFHeader, b.csrf.Token(other.Value), "Origin", b.srv.URL)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "the header works too (a script's sign-out)")
	})
}

// A cross-site form post (login CSRF, or a sign-out forced on the user)
// is refused.
func TestCrossSiteFormsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{})
	form := url.Values{"api_key": {b.key}, "api_secret": {b.secret}}
	for name, headers := range map[string][]string{
		"foreign origin":    {"Origin", "https://evil.example"},
		"cross-site fetch":  {"Sec-Fetch-Site", "cross-site"},
		"same-site sibling": {"Sec-Fetch-Site", "same-site"},
		"opaque origin":     {"Origin", "null"},
	} {
		r := b.do(t, http.MethodPost, "/dashboard/sign-in", form, headers...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, name)
		require.Empty(t, r.Cookies(), name)
	}
	r := b.do(t, http.MethodPost, "/dashboard/sign-in", form, "Origin", "", "Sec-Fetch-Site", "")
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "a client that says nothing of its origin (no browser) may sign in")
}

func TestCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{tls: true})
	c := b.signIn(t)
	require.True(t, c.Secure)
	require.True(t, c.HttpOnly)

	proxied := setup(t, store.SQLite, options{trustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	form := url.Values{"api_key": {proxied.key}, "api_secret": {proxied.secret}}
	r := proxied.do(t, http.MethodPost, "/dashboard/sign-in", form, "X-Forwarded-Proto", "https", "Origin", "https://"+strings.TrimPrefix(proxied.srv.URL, "http://"))
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "body: %s", r.body)
	require.True(t, sessionCookie(t, r.Response).Secure, "a trusted TLS proxy says the browser came over https")

	plain := setup(t, store.SQLite, options{})
	r = plain.do(t, http.MethodPost, "/dashboard/sign-in", url.Values{"api_key": {plain.key}, "api_secret": {plain.secret}}, "X-Forwarded-Proto", "https")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.False(t, sessionCookie(t, r.Response).Secure, "an untrusted peer's X-Forwarded-Proto is ignored")
}

// Every response under /dashboard carries the security headers (do checks
// them on each), errors and redirects included.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{})
	c := b.signIn(t)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/dashboard"}, {http.MethodGet, "/dashboard/"}, {http.MethodGet, "/dashboard/sign-in"},
		{http.MethodGet, "/dashboard/nonsense"}, {http.MethodGet, "/dashboard/assets/app.js"},
		{http.MethodGet, "/dashboard/assets/missing.js"}, {http.MethodDelete, "/dashboard/"}, {http.MethodHead, "/dashboard/"},
		{http.MethodPut, "/dashboard/sign-in"},
	} {
		b.do(t, req.method, req.path, nil)
		b.do(t, req.method, req.path, nil, withCookie(c)...)
	}
	r := b.do(t, http.MethodGet, "/dashboard/nonsense", nil, withCookie(c)...)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	requireNoInlineCode(t, r.body)
	r = b.do(t, http.MethodDelete, "/dashboard/", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	r = b.do(t, http.MethodGet, "/dashboard", nil)
	require.Equal(t, http.StatusPermanentRedirect, r.StatusCode)
	require.Equal(t, "/dashboard/", r.Header.Get("Location"))
}

func TestAssets(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, options{})
	for name, typ := range map[string]string{"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"} {
		path := "/dashboard/assets/" + name
		r := b.do(t, http.MethodGet, path, nil, "Accept-Encoding", "identity")
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.Equal(t, typ, r.Header.Get("Content-Type"))
		require.Equal(t, "no-cache", r.Header.Get("Cache-Control"), "an unversioned URL is revalidated")
		etag := r.Header.Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
		plain := r.body

		r = b.do(t, http.MethodGet, path, nil, "If-None-Match", etag, "Accept-Encoding", "identity")
		require.Equal(t, http.StatusNotModified, r.StatusCode)
		require.Empty(t, r.body)

		shell := b.do(t, http.MethodGet, "/dashboard/sign-in", nil).body
		versioned := regexp.MustCompile(`/dashboard/assets/` + regexp.QuoteMeta(name) + `\?v=[0-9a-f]+`).FindString(shell)
		require.NotEmpty(t, versioned)
		r = b.do(t, http.MethodGet, versioned, nil)
		require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"), "a versioned URL is kept")
		r = b.do(t, http.MethodGet, path+"?v=stale", nil)
		require.Equal(t, "no-cache", r.Header.Get("Cache-Control"), "a stale version is not kept")

		// Transport compression off, to see the encoding as sent.
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			require.NoError(t, err)
			unzipped, err := io.ReadAll(zr)
			require.NoError(t, err)
			require.Equal(t, plain, string(unzipped))
			require.NotEqual(t, etag, resp.Header.Get("ETag"), "each encoding has its own ETag")
		} else {
			require.Equal(t, plain, string(raw), "too small to pay for compression")
		}
		require.Contains(t, resp.Header.Values("Vary"), "Accept-Encoding")
	}
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/dashboard/assets/nothing.js", nil).StatusCode)
	r := b.do(t, http.MethodGet, "/dashboard/assets/../dashboard.go", nil)
	require.NotEqual(t, http.StatusOK, r.StatusCode, "only embedded assets are served")
	require.NotContains(t, r.body, "package dashboard")
}
