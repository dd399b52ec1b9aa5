package tests

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// receiver is a webhook and cron endpoint on 127.0.0.1 that records the
// paths it was called on.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// waitCalled waits until the receiver has been called on path.
func (r *receiver) waitCalled(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		called := false
		for _, p := range r.paths {
			called = called || p == path
		}
		r.mu.Unlock()
		if called {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver was not called on %s within %s", path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// demoBanner is the part of the `serve --demo` banner about the dashboard
// and the private ranges.
var demoBanner = regexp.MustCompile(`(?m)^Dashboard:\s+(\S+)\nPrivate URLs:\s+webhooks, cron jobs and media may call (.+)\n\s+\(demo only: without --demo, SWITCHBOARD_ALLOW_PRIVATE_URLS must list them\)\n`)

// TestServeDemoCallsLocalReceivers follows a newcomer whose webhook and cron
// receiver runs on their own machine: `serve --demo` allows loopback and
// private addresses and says so, with the dashboard's address; without
// --demo the same URLs are refused with a message naming the setting that
// allows them.
func TestServeDemoCallsLocalReceivers(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)

	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		b := setupEmpty(t, store.SQLite)
		srv := b.serve(t, "--demo")
		m := srv.waitStdout(t, demoCurl)
		accountID, key, secret := m[1], m[2], m[3]
		banner := srv.waitStdout(t, demoBanner)
		require.Equal(t, srv.URL+"/dashboard/", banner[1])
		require.Contains(t, banner[2], "127.0.0.0/8")
		require.Contains(t, banner[2], "::1/128")
		require.NotContains(t, banner[2], "169.254", "link-local (cloud metadata) stays refused")

		client := openapitest.New(t, srv.URL)
		r := client.Do(http.MethodPut, "/v1/accounts/"+accountID+"/webhook", map[string]any{"url": recv.URL + "/hook"}, auth(key, secret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPost, "/v1/accounts/"+accountID+"/webhook/test", nil, auth(key, secret)...)
		require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
		recv.waitCalled(t, "/hook", 15*time.Second)

		r = client.Do(http.MethodPost, "/v1/cron-jobs", map[string]any{"endpoint_url": recv.URL + "/cron", "frequency": "daily", "time": "09:30",
			"timezone": "Europe/London", "method": "POST"}, auth(key, secret)...)
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)

		// The metadata address stays refused, with the setting named.
		r = client.Do(http.MethodPut, "/v1/accounts/"+accountID+"/webhook", map[string]any{"url": "https://169.254.169.254/latest"}, auth(key, secret)...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
		require.Contains(t, string(r.Body), "SWITCHBOARD_ALLOW_PRIVATE_URLS")
		srv.stop(t)
	})

	t.Run("not demo", func(t *testing.T) {
		t.Parallel()
		b := setup(t, store.SQLite)
		acc := b.createAccount(t, "Acme")
		srv := b.serve(t)
		client := openapitest.New(t, srv.URL)
		// The full-width spelling is the address net/http dials.
		fullWidth := strings.Replace(strings.Replace(recv.URL, "http:", "https:", 1), "127.0.0.1", "１２７.０.０.１", 1)
		for _, url := range []string{recv.URL + "/hook", strings.Replace(recv.URL, "http:", "https:", 1) + "/hook", fullWidth + "/hook"} {
			r := client.Do(http.MethodPut, "/v1/accounts/"+acc.AccountID+"/webhook", map[string]any{"url": url}, auth(acc.APIKey, acc.APISecret)...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
			detail := r.JSON(t)["detail"].([]any)[0].(map[string]any)
			require.Equal(t, "url_forbidden", detail["type"], url)
			require.Equal(t, []any{"body", "url"}, detail["loc"])
			require.Contains(t, detail["msg"], "SWITCHBOARD_ALLOW_PRIVATE_URLS", url)
		}

		r := client.Do(http.MethodPost, "/v1/cron-jobs", map[string]any{"endpoint_url": recv.URL + "/cron", "frequency": "daily", "time": "09:30",
			"timezone": "Europe/London", "method": "POST"}, auth(acc.APIKey, acc.APISecret)...)
		require.Equal(t, http.StatusBadRequest, r.StatusCode, "%s", r.Body)
		e := r.JSON(t)["error"].(map[string]any)
		details := e["details"].(map[string]any)["endpoint_url"].([]any)
		require.Contains(t, details[0], "SWITCHBOARD_ALLOW_PRIVATE_URLS")

		// Nothing was called.
		recv.mu.Lock()
		defer recv.mu.Unlock()
		require.NotContains(t, recv.paths, "/cron")
		srv.stop(t)
	})
}
