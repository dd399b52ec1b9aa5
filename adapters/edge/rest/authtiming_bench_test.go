package rest_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/cache"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
)

// BenchmarkFailedAuthentication times, through the REST handler over a
// real store (SQLite, then Postgres) behind the credential cache (as
// `serve` wires them),
// requests refused for an unknown key (a new one each time, as a caller
// guessing keys sends) and for a known key with a wrong secret (a key in
// use, so kept in the cache), interleaved, b.N of each. It reports the
// median of each and their difference (unknown minus known, in µs): a
// difference near zero means the answer's timing does not tell whether a
// key exists.
//
//	scripts/with-postgres go test -run '^$' -bench FailedAuthentication -benchtime 1000x ./adapters/edge/rest/
func BenchmarkFailedAuthentication(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) { benchmarkFailedAuthentication(b, dialect) })
	}
}

func benchmarkFailedAuthentication(b *testing.B, dialect store.Dialect) {
	db := dbtest.Open(b, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(b, err)
	caches := cache.New(cache.Options{TTL: time.Hour})
	svc := accounts.NewService(caches.Accounts(db.AccountStore()), keys, accounts.Options{})
	a, cred, err := svc.CreateAccount(context.Background(), "Acme")
	require.NoError(b, err)
	h, err := rest.NewHandler(edge.Deps{
		Accounts: svc, Ready: db.Ready, Registry: prometheus.NewRegistry(), Limits: unlimited, Logger: slog.New(slog.DiscardHandler),
	}, rest.Deps{Accounts: svc, EmailDomain: "mail.example.test"})
	require.NoError(b, err)

	path := "/v1/accounts/" + a.ID
	refused := func(key, secret string) time.Duration {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-API-Key", key)
		req.Header.Set("X-API-Secret", secret)
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		took := time.Since(start)
		if w.Code != http.StatusUnauthorized {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		return took
	}
	// The key's owner uses it: it is in the cache, as a key in use is.
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("X-API-Key", cred.Key)
	req.Header.Set("X-API-Secret", cred.Secret)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	require.Equal(b, http.StatusOK, w.Code)
	wrongSecret := accounts.SecretPrefix + rand.Text() + rand.Text()
	for range 100 { // warm up
		refused(accounts.KeyPrefix+rand.Text(), wrongSecret)
		refused(cred.Key, wrongSecret)
	}

	unknown := make([]time.Duration, 0, b.N)
	known := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so that neither always follows
		// the other.
		u := accounts.KeyPrefix + rand.Text()
		if i%2 == 0 {
			unknown = append(unknown, refused(u, wrongSecret))
			known = append(known, refused(cred.Key, wrongSecret))
		} else {
			known = append(known, refused(cred.Key, wrongSecret))
			unknown = append(unknown, refused(u, wrongSecret))
		}
	}
	b.StopTimer()
	mu, mk := median(unknown), median(known)
	b.ReportMetric(float64(mu.Nanoseconds())/1e3, "unknown-key-µs")
	b.ReportMetric(float64(mk.Nanoseconds())/1e3, "wrong-secret-µs")
	b.ReportMetric(float64((mu-mk).Nanoseconds())/1e3, "difference-µs")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
