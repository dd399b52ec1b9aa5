package browser

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Sign-in as a newcomer does it: a wrong secret shows the error and no
// console; the right one shows the account's id and name, and every
// page of the navigation; sign-out ends the session, so the console
// sends the browser back to sign in.
func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{accountName: "Acme <b>Ops</b>"})
	tb := newTab(t, s.URL)

	tb.open("/dashboard/")
	tb.waitVisible("#api_key")
	require.Equal(t, "/dashboard/sign-in", tb.path(), "the console sends a stranger to sign in")

	tb.signIn(s.Account.Key, s.Account.Secret+"x")
	tb.waitVisible("#sign-in-error")
	require.Contains(t, tb.text("#sign-in-error"), "The API key or secret is wrong")
	require.Equal(t, "true", eval[string](tb, `document.getElementById('api_secret').getAttribute('aria-invalid')`))
	tb.waitFor("the secret to have the focus", `() => document.activeElement && document.activeElement.id === 'api_secret'`)

	tb.signIn(s.Account.Key, s.Account.Secret)
	tb.waitReady()
	require.Equal(t, "/dashboard/", tb.path())
	require.Equal(t, s.Account.ID, tb.text(".account-id"))
	require.Equal(t, "Acme <b>Ops</b>", tb.text(".account-name"), "the name as text")
	for _, word := range []string{"Overview", "Threads", "Webhook", "Cron", "Email"} {
		require.Equal(t, 1, eval[int](tb, `[...document.querySelectorAll('nav.main-nav a')].filter((a) => a.textContent === `+jsString(word)+`).length`), word)
	}

	tb.clickText("Sign out")
	tb.waitVisible("#api_key")
	require.Equal(t, "/dashboard/sign-in", tb.path())
	tb.open("/dashboard/threads")
	tb.waitVisible("#api_key")
	require.Equal(t, "/dashboard/sign-in", tb.path(), "signed out: the console is closed")
	tb.requireHealthy()
}

// A session that ends under an open page (its key revoked with the CLI)
// sends the browser to sign in on its next request, and back to the page
// after signing in with a key that works.
func TestEndedSessionSignsInAgain(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/threads")
	tb.waitReady()

	var revoked struct {
		KeyID string `json:"key_id"`
	}
	s.cliJSON(&revoked, "keys", "revoke", "--account", s.Account.ID, "--key", s.Account.KeyID)
	require.Equal(t, s.Account.KeyID, revoked.KeyID)
	var fresh account
	s.cliJSON(&fresh, "keys", "create", "--account", s.Account.ID)

	// The page learns it either from its next API request (401) or from
	// its WebSocket, which the server closes (4403) once the key is
	// revoked: whichever comes first navigates, so the request is made
	// without waiting on the page that may be leaving.
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	_ = chromedp.Do(ctx, evalVoid(`document.querySelector('form[role="search"] button[type="submit"]').click()`))
	cancel()
	tb.waitPath("/dashboard/sign-in")
	require.Equal(t, "/dashboard/threads", eval[string](tb, `document.querySelector('input[name="next"]').value`))
	tb.waitVisible("#api_key")
	tb.fill("#api_key", fresh.Key)
	tb.fill("#api_secret", fresh.Secret)
	tb.do(chromedp.Click(chromedp.CSS(`main.sign-in button[type="submit"]`)))
	tb.waitPath("/dashboard/threads")
	tb.waitReady()
	tb.requireHealthy()
}
