package browser

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
)

// The database goes away under an open console (Postgres behind a fault
// proxy that cuts every connection and refuses new ones): the page says
// so in a banner and keeps trying; when the database is back, the banner
// goes and the page shows what was asked, without a reload.
func TestDatabaseAwayShowsAndRecovers(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t, store.Postgres)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := faultproxy.Start(t, u.Host)
	key := make([]byte, 32)
	_, err = rand.Read(key)
	require.NoError(t, err)
	s := startServer(t, serverOptions{dbURL: proxy.URL(dbURL), env: []string{"SWITCHBOARD_SECRET_KEY=" + hex.EncodeToString(key)}})
	s.inbound("+14155550123", "Ann", "Before the outage")
	s.inbound("+14155550124", "Bob", "Also before")

	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/threads")
	tb.waitReady()
	tb.waitText(".thread-list", "Before the outage")
	tb.do(evalVoid(`window.__sameDocument = true`))

	proxy.SetRefuse(true)
	proxy.Cut()
	tb.fill(`input[name="phone"]`, "+14155550123")
	tb.clickText("Filter")
	tb.waitVisible("#outage")
	require.Contains(t, tb.text("#outage"), "Retrying")

	proxy.SetRefuse(false)
	tb.waitFor("the banner to go", `() => { const b = document.getElementById('outage'); return b && b.hidden; }`)
	tb.waitFor("the filtered list", `() => document.querySelectorAll('.thread-list li').length === 1`)
	require.Contains(t, tb.text(".thread-list"), "Before the outage")
	require.True(t, eval[bool](tb, `window.__sameDocument === true`), "recovered without a reload")
	tb.requireHealthy()
}
