package tests

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// dashboardCSP is the policy every dashboard response must carry.
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// browser is a client of the dashboard that follows no redirects and
// keeps the session cookie itself, so that tests see every answer.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	cookie *http.Cookie
}

func newBrowser(t *testing.T, base string, transport http.RoundTripper) *browser {
	return &browser{t: t, base: base, client: &http.Client{
		Timeout: 10 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
	res    *http.Response
}

// do sends a request with the session cookie (when signed in), from the
// dashboard's own origin on anything but GET; headers are name, value
// pairs. Every answer below /dashboard must carry the security headers.
func (br *browser) do(method, path string, body io.Reader, contentType string, headers ...string) page {
	br.t.Helper()
	req, err := http.NewRequest(method, br.base+path, body)
	require.NoError(br.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", br.base)
	}
	if br.cookie != nil {
		req.AddCookie(br.cookie)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := br.client.Do(req)
	require.NoError(br.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(br.t, err)
	if strings.HasPrefix(path, "/dashboard") {
		require.Equal(br.t, dashboardCSP, res.Header.Get("Content-Security-Policy"), "%s %s", method, path)
		require.Equal(br.t, "nosniff", res.Header.Get("X-Content-Type-Options"), "%s %s", method, path)
		require.Equal(br.t, "same-origin", res.Header.Get("Referrer-Policy"), "%s %s", method, path)
	}
	return page{status: res.StatusCode, header: res.Header, body: string(raw), res: res}
}

// signIn posts the sign-in form and keeps the session cookie it gets.
func (br *browser) signIn(key, secret string) page {
	br.t.Helper()
	form := url.Values{"api_key": {key}, "api_secret": {secret}}
	p := br.do(http.MethodPost, "/dashboard/sign-in", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded")
	for _, c := range p.res.Cookies() {
		if c.Name == "sb_session" {
			br.cookie = c
		}
	}
	return p
}

var csrfMetaTag = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// csrf reads the CSRF token off the console page.
func (br *browser) csrf() string {
	br.t.Helper()
	p := br.do(http.MethodGet, "/dashboard/", nil, "")
	require.Equal(br.t, http.StatusOK, p.status)
	m := csrfMetaTag.FindStringSubmatch(p.body)
	require.NotNil(br.t, m)
	return m[1]
}

// The console from a newcomer's side, on the built binary: sign in with
// the key and secret the CLI printed, see the account, call the API with
// the session, and lose the session when the key is revoked.
func TestDashboardSignInAndSessions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Console <Co>")
		srv := b.serve(t, "--max-body-bytes", "4096")
		br := newBrowser(t, srv.URL, nil)

		p := br.do(http.MethodGet, "/dashboard/", nil, "")
		require.Equal(t, http.StatusSeeOther, p.status)
		require.Equal(t, "/dashboard/sign-in", p.header.Get("Location"))
		p = br.do(http.MethodGet, "/dashboard/sign-in", nil, "")
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, `name="api_key"`)
		require.Contains(t, p.body, `name="api_secret"`)
		require.Equal(t, "no-store", p.header.Get("Cache-Control"))

		// A form past the API's body limit is the dashboard's to judge,
		// with its page and headers (do checks them): a key too long is
		// a wrong key.
		p = br.do(http.MethodPost, "/dashboard/sign-in", strings.NewReader("api_key="+strings.Repeat("k", 8<<10)+"&api_secret=x"), "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusUnauthorized, p.status)

		p = br.signIn(acct.APIKey, acct.APISecret+"x")
		require.Equal(t, http.StatusUnauthorized, p.status)
		require.Contains(t, p.body, "The API key or secret is wrong")
		require.Nil(t, br.cookie)

		p = br.signIn(acct.APIKey, acct.APISecret)
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, "/dashboard/", p.header.Get("Location"))
		require.NotNil(t, br.cookie)
		require.True(t, br.cookie.HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, br.cookie.SameSite)
		require.False(t, br.cookie.Secure, "plain HTTP")
		require.Equal(t, "/", br.cookie.Path)

		p = br.do(http.MethodGet, "/dashboard/", nil, "")
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, acct.AccountID)
		require.Contains(t, p.body, "Console &lt;Co&gt;")
		for _, word := range []string{"Overview", "Threads", "Webhook", "Cron", "Email"} {
			require.Contains(t, p.body, ">"+word+"<")
		}
		for _, asset := range []string{"app.js", "app.css"} {
			m := regexp.MustCompile(`"(/dashboard/assets/` + regexp.QuoteMeta(asset) + `\?v=[0-9a-f]+)"`).FindStringSubmatch(p.body)
			require.NotNil(t, m, asset)
			a := br.do(http.MethodGet, m[1], nil, "")
			require.Equal(t, http.StatusOK, a.status, asset)
			require.NotEmpty(t, a.header.Get("ETag"), asset)
		}
		csrf := br.csrf()

		// The API with the session cookie, held to the OpenAPI document.
		client := srv.client(t)
		path := "/v1/accounts/" + acct.AccountID
		cookie := []string{"Cookie", "sb_session=" + br.cookie.Value, "Origin", srv.URL}
		r := client.Do(http.MethodGet, path, nil, cookie...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		r = client.Do(http.MethodPatch, path, map[string]any{"name": "Renamed"}, cookie...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
		require.Equal(t, "csrf_token_invalid", r.JSON(t)["code"])
		r = client.Do(http.MethodPatch, path, map[string]any{"name": "Renamed"}, "Cookie", "sb_session="+br.cookie.Value, "Origin", "https://evil.example", "X-CSRF-Token", csrf)
		require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
		require.Equal(t, "cross_site_request", r.JSON(t)["code"])
		r = client.Do(http.MethodPatch, path, map[string]any{"name": "Renamed"}, append(cookie, "X-CSRF-Token", csrf)...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		r = client.Do(http.MethodGet, path, nil, "Cookie", "sb_session="+strings.Repeat("A", len(br.cookie.Value)))
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "a forged cookie")

		// Revoked with the CLI, which cannot reach the server's caches:
		// the session ends within about a second anyway.
		var revoked listedKey
		b.cliJSON(t, &revoked, "keys", "revoke", "--account", acct.AccountID, "--key", acct.KeyID)
		require.Eventually(t, func() bool {
			return client.Do(http.MethodGet, path, nil, cookie...).StatusCode == http.StatusUnauthorized
		}, 10*time.Second, 20*time.Millisecond, "the revoked key's session still works on the API")
		p = br.do(http.MethodGet, "/dashboard/", nil, "")
		require.Equal(t, http.StatusSeeOther, p.status, "the console sends the browser to sign in again")
	})
}

// Failed sign-ins and failed API keys draw on one budget per address:
// past it, the right secret is refused on either.
func TestDashboardSignInSharesTheFailedAuthenticationBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Budget")
	srv := b.serve(t, "--auth-failures-per-minute", "3")
	br := newBrowser(t, srv.URL, nil)
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, br.signIn(acct.APIKey, "sws_wrong").status)
	}
	r := srv.client(t).Do(http.MethodGet, "/v1/accounts/"+acct.AccountID, nil, auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusTooManyRequests, r.StatusCode, "the API refuses the right key after failed sign-ins")
	p := br.signIn(acct.APIKey, acct.APISecret)
	require.Equal(t, http.StatusTooManyRequests, p.status)
	require.NotEmpty(t, p.header.Get("Retry-After"))
	require.Nil(t, br.cookie)
}

// A session unused for --session-idle-timeout ends; sign-out ends one at
// once.
func TestDashboardSessionsEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Idle")
		srv := b.serve(t, "--session-idle-timeout", "1s")
		path := "/v1/accounts/" + acct.AccountID

		idle := newBrowser(t, srv.URL, nil)
		require.Equal(t, http.StatusSeeOther, idle.signIn(acct.APIKey, acct.APISecret).status)
		require.Equal(t, http.StatusOK, idle.do(http.MethodGet, "/dashboard/", nil, "").status)
		time.Sleep(1500 * time.Millisecond)
		require.Equal(t, http.StatusSeeOther, idle.do(http.MethodGet, "/dashboard/", nil, "").status, "idle past the timeout")
		r := srv.client(t).Do(http.MethodGet, path, nil, "Cookie", "sb_session="+idle.cookie.Value)
		require.Equal(t, http.StatusUnauthorized, r.StatusCode)

		out := newBrowser(t, srv.URL, nil)
		require.Equal(t, http.StatusSeeOther, out.signIn(acct.APIKey, acct.APISecret).status)
		csrf := out.csrf()
		p := out.do(http.MethodPost, "/dashboard/sign-out", strings.NewReader(url.Values{"csrf_token": {csrf}}.Encode()), "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Contains(t, p.header.Get("Set-Cookie"), "Max-Age=0", "the browser forgets the cookie")
		r = srv.client(t).Do(http.MethodGet, path, nil, "Cookie", "sb_session="+out.cookie.Value)
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "the server forgot the session")
	})
}

// Served over TLS, the session cookie is Secure.
func TestDashboardCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := writeSelfSignedCert(t)
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "TLS")
	srv := b.serve(t, "--tls-cert-file", certFile, "--tls-key-file", keyFile)
	br := newBrowser(t, srv.URL, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}})
	p := br.signIn(acct.APIKey, acct.APISecret)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.True(t, br.cookie.Secure)
	require.True(t, br.cookie.HttpOnly)
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/dashboard/", nil, "").status)
}
