package tests

import (
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// Three replicas of one Postgres deployment hold one limit between them:
// each used to keep its own buckets, so three admitted about three times
// the limit (348 requests where one limit of 100 a minute admits at most
// 117). Both the per-account request limit and the failed-authentication
// limit are checked, within 10% of what one process admits.
func TestReplicasShareOneLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	acct := b.createAccount(t, "Shared")
	const rate, burst, failures = 2.0, 30, 30
	replicas := make([]*serverProc, 3)
	for i := range replicas {
		replicas[i] = launchServer(t, b.env, "--database-url", b.dbURL,
			"--rate-limit", "2", "--rate-burst", "30", "--auth-failures-per-minute", "30")
	}
	for _, r := range replicas {
		r.waitListening(t)
	}
	path := "/v1/accounts/" + acct.AccountID

	// storm sends n requests with secret over 6 connections, in turn to
	// each replica, and counts the answers by status.
	storm := func(n int, secret string) (counts map[int]int, elapsed time.Duration, sample http.Header) {
		var (
			mu   sync.Mutex
			next atomic.Int64
			wg   sync.WaitGroup
		)
		counts = map[int]int{}
		start := time.Now()
		for range 6 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
					req, err := http.NewRequest(http.MethodGet, replicas[i%3].URL+path, nil)
					require.NoError(t, err)
					req.Header.Set("X-API-Key", acct.APIKey)
					req.Header.Set("X-API-Secret", secret)
					res, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					res.Body.Close()
					mu.Lock()
					counts[res.StatusCode]++
					if res.StatusCode == http.StatusOK && sample == nil {
						sample = res.Header
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return counts, time.Since(start), sample
	}

	t.Run("Requests", func(t *testing.T) {
		counts, elapsed, sample := storm(300, acct.APISecret)
		oneProcess := burst + rate*elapsed.Seconds()
		t.Logf("%v in %s; one process admits at most %.1f", counts, elapsed.Round(time.Millisecond), oneProcess)
		require.Equal(t, 300, counts[http.StatusOK]+counts[http.StatusTooManyRequests], "only 200 and 429: %v", counts)
		require.LessOrEqual(t, float64(counts[http.StatusOK]), 1.1*oneProcess, "the replicas admitted more than one limit")
		require.GreaterOrEqual(t, counts[http.StatusOK], burst*9/10, "the replicas admitted much less than one limit")
		require.Equal(t, `"account";q=30;w=15`, sample.Get("RateLimit-Policy"))
		require.Regexp(t, regexp.MustCompile(`^"account";r=\d+;t=\d+$`), sample.Get("RateLimit"))
	})

	t.Run("FailedAuthentications", func(t *testing.T) {
		counts, elapsed, _ := storm(300, "sws_wrong")
		oneProcess := failures + failures/60.0*elapsed.Seconds()
		t.Logf("%v in %s; one process lets at most %.1f fail", counts, elapsed.Round(time.Millisecond), oneProcess)
		require.Equal(t, 300, counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests], "only 401 and 429: %v", counts)
		require.LessOrEqual(t, float64(counts[http.StatusUnauthorized]), 1.1*oneProcess, "the replicas checked more secrets than one budget")
		require.GreaterOrEqual(t, counts[http.StatusUnauthorized], failures)
	})
}
