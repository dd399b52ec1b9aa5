package webhooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// 1,000 deliveries through the job queue to a receiver on 127.0.0.1: every
// one verifies with the Standard Webhooks reference library and with the
// x-signature rule, no copy with one byte changed verifies, and the events
// of each thread arrive in order.
func TestDeliveriesAreSignedAndOrdered(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			b := setup(t, dialect, options{})
			b.put(t, rc.srv.URL+"/hooks/switchboard")
			const total, threads = 1000, 20
			for i := range total {
				b.emit(t, fmt.Sprintf("thr_%02d", i%threads), i)
			}
			waitFor(t, "1,000 deliveries", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == total })

			got := rc.requests()
			require.Len(t, got, total, "each delivery is posted once to a healthy receiver")
			validStd, validLegacy, tamperedValid := 0, 0, 0
			ids := map[string]bool{}
			last := map[string]int{}
			for _, r := range got {
				if verifyStandard(b.secret, r) == nil {
					validStd++
				}
				if verifyLegacy(b.secret, r) {
					validLegacy++
				}
				for _, pos := range []int{0, len(r.Body) / 2, len(r.Body) - 1} {
					tampered := received{Header: r.Header, Body: append([]byte(nil), r.Body...)}
					tampered.Body[pos] ^= 0x01
					if verifyStandard(b.secret, tampered) == nil || verifyLegacy(b.secret, tampered) {
						tamperedValid++
					}
				}
				ids[r.Header.Get("webhook-id")] = true
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				var p struct {
					ThreadID string `json:"thread_id"`
					N        int    `json:"n"`
				}
				require.NoError(t, json.Unmarshal(r.Body, &p))
				if prev, seen := last[p.ThreadID]; seen {
					require.Greater(t, p.N, prev, "events of thread %s arrive in order", p.ThreadID)
				}
				last[p.ThreadID] = p.N
			}
			require.Equal(t, total, validStd, "every delivery verifies with the reference library")
			require.Equal(t, total, validLegacy, "every delivery verifies with the x-signature rule")
			require.Zero(t, tamperedValid, "no tampered copy verifies")
			require.Len(t, ids, total, "each delivery has its own webhook-id")
		})
	}
}

// 500, 500, 500, 200: four attempts with the same webhook-id, each with a
// fresh timestamp and a valid signature, logged one by one.
func TestRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n <= 3 {
					w.WriteHeader(http.StatusInternalServerError)
					_, _ = w.Write([]byte("try later " + strings.Repeat("x", 5000)))
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			// The test clock moves one second per reading, so every attempt
			// carries a new timestamp although the schedule is scaled down
			// to milliseconds.
			var tick atomic.Int64
			start := time.Now()
			b := setup(t, dialect, options{now: func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Second) }})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_retry", 1)
			waitFor(t, "the delivery to succeed", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == 1 })

			got := rc.requests()
			require.Len(t, got, 4, "exactly four attempts")
			stamps := map[string]bool{}
			for _, r := range got {
				require.Equal(t, got[0].Header.Get("webhook-id"), r.Header.Get("webhook-id"), "the same webhook-id on every attempt")
				require.NoError(t, verifyStandard(b.secret, r))
				require.True(t, verifyLegacy(b.secret, r))
				stamps[r.Header.Get("webhook-timestamp")] = true
			}
			require.Len(t, stamps, 4, "a new timestamp on every attempt")
			d := b.deliveries(t, "")[0]
			require.Equal(t, got[0].Header.Get("webhook-id"), d.ID)
			require.Equal(t, 4, d.Attempts)
			require.Len(t, d.Log, 4)
			for i, code := range []int{500, 500, 500, 200} {
				require.Equal(t, code, d.Log[i].StatusCode)
			}
			require.Len(t, d.Log[0].Response, webhook.MaxResponseBytes, "the log keeps the first 4 KiB of the answer")
			require.True(t, strings.HasPrefix(d.Log[0].Response, "try later"))
			require.Contains(t, d.Log[0].Error, "500")
			require.Empty(t, d.Log[3].Error)
		})
	}
}

// 410 disables the endpoint at once and keeps an endpoint.disabled record.
func TestGoneDisables(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
			b := setup(t, dialect, options{})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_gone", 1)
			waitFor(t, "the delivery to fail", func() bool { return len(b.deliveries(t, webhook.Failed)) == 1 })
			require.Len(t, rc.requests(), 1, "one attempt only")
			v, err := b.svc.Get(context.Background(), b.account)
			require.NoError(t, err)
			require.False(t, v.Endpoint.Enabled)
			require.Equal(t, webhook.ReasonGone, v.Endpoint.DisabledReason)
			evs, _, err := b.svc.Updates(context.Background(), b.account, "", 100)
			require.NoError(t, err)
			require.Equal(t, event.EndpointDisabled, evs[len(evs)-1].Type, "an endpoint.disabled record is kept")

			// Later events are not delivered to a disabled endpoint.
			b.emit(t, "thr_gone", 2)
			require.Len(t, b.deliveries(t, ""), 1)
			_, err = b.svc.Test(context.Background(), b.account, nil)
			require.True(t, failure.Is(err, failure.KindConflict), "testing a disabled webhook is refused: %v", err)
		})
	}
}

// A 302 is a failure; its target never gets a request.
func TestRedirectIsFailure(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			target := newReceiver(t, nil)
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusFound)
			})
			b := setup(t, dialect, options{schedule: scaled(100000)})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_redirect", 1)
			waitFor(t, "the delivery to fail", func() bool { return len(b.deliveries(t, webhook.Failed)) == 1 })
			d := b.deliveries(t, "")[0]
			require.Equal(t, len(webhook.Schedule), d.Attempts, "every scheduled attempt was made")
			require.Len(t, rc.requests(), len(webhook.Schedule))
			require.Zero(t, target.count.Load(), "the redirect target gets no request")
			require.Equal(t, http.StatusFound, d.Log[0].StatusCode)
			require.Contains(t, d.Log[0].Error, "redirect")
		})
	}
}

// An answer whose header runs past 64 KiB is a failed attempt, retried,
// however successful its status.
func TestOverlongResponseHeaderIsFailure(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			big := strings.Repeat("h", 1<<10)
			rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					for i := range 1 << 10 { // 1 MiB of headers
						w.Header().Set(fmt.Sprintf("X-Filler-%d", i), big)
					}
				}
				w.WriteHeader(http.StatusOK)
			})
			b := setup(t, dialect, options{schedule: scaled(100000)})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_headers", 1)
			waitFor(t, "the delivery to succeed", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == 1 })
			d := b.deliveries(t, "")[0]
			require.Equal(t, 2, d.Attempts, "the over-long answer was retried")
			require.Zero(t, d.Log[0].StatusCode)
			require.Contains(t, d.Log[0].Error, "response header larger than 65536 bytes")
			require.Equal(t, http.StatusOK, d.Log[1].StatusCode)
		})
	}
}

// A receiver that answers 103 Early Hints and then 500: the delivery is
// logged with the 500 and its body, and the next delivery, answered 200,
// with its own 200 (not the answer before).
func TestEarlyHintsThenErrorIsLoggedAsTheError(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newRawReceiver(t, func(n int, w *bufio.Writer) error {
				if n == 1 {
					_, err := w.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
						"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 12\r\n\r\nbroken today")
					return err
				}
				_, err := w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nreceived")
				return err
			})
			b := setup(t, dialect, options{schedule: []time.Duration{0}})
			b.put(t, rc.url+"/hook")
			b.emit(t, "thr_hints", 1)
			waitFor(t, "the first delivery to fail", func() bool { return len(b.deliveries(t, webhook.Failed)) == 1 })
			b.emit(t, "thr_hints", 2)
			waitFor(t, "the second delivery to succeed", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == 1 })

			failed := b.deliveries(t, webhook.Failed)[0]
			require.Len(t, failed.Log, 1)
			require.Equal(t, http.StatusInternalServerError, failed.Log[0].StatusCode)
			require.Equal(t, "broken today", failed.Log[0].Response)
			require.Contains(t, failed.Log[0].Error, "500")
			ok := b.deliveries(t, webhook.Succeeded)[0]
			require.Len(t, ok.Log, 1)
			require.Equal(t, http.StatusOK, ok.Log[0].StatusCode)
			require.Equal(t, "received", ok.Log[0].Response)
			require.Empty(t, ok.Log[0].Error)
			require.EqualValues(t, 2, rc.count.Load())
		})
	}
}

// Failing every attempt for the disable window disables the endpoint.
func TestFailingForDaysDisables(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
			// Five days scaled like the schedule (1/100000): 4.32 s.
			b := setup(t, dialect, options{schedule: scaled(100000), disableAfter: webhook.DisableAfter / 100000})
			b.put(t, rc.srv.URL+"/hook")
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; ; i++ {
				v, err := b.svc.Get(context.Background(), b.account)
				require.NoError(t, err)
				if !v.Endpoint.Enabled {
					require.Equal(t, webhook.ReasonFailing, v.Endpoint.DisabledReason)
					break
				}
				require.True(t, time.Now().Before(deadline), "the endpoint was not disabled")
				b.emit(t, "thr_fail", i)
				time.Sleep(50 * time.Millisecond)
			}
			// Every page of the account's events: a busy machine emits more
			// than one page of messages before the endpoint is disabled.
			var disabled int
			for after := ""; ; {
				evs, next, err := b.svc.Updates(context.Background(), b.account, after, 100)
				require.NoError(t, err)
				for _, e := range evs {
					if e.Type == event.EndpointDisabled {
						disabled++
					}
				}
				if len(evs) == 0 || next == after {
					break
				}
				after = next
			}
			require.Equal(t, 1, disabled, "one endpoint.disabled record")
		})
	}
}

// A receiver that never answers fails at the timeout, and no goroutine is
// left behind.
func TestTimeoutLeavesNoGoroutines(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			b := setup(t, dialect, options{timeout: 200 * time.Millisecond, schedule: []time.Duration{0}})
			release := make(chan struct{})
			rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_slow", 1)
			waitFor(t, "the delivery to fail", func() bool { return len(b.deliveries(t, webhook.Failed)) == 1 })
			d := b.deliveries(t, "")[0]
			require.Equal(t, 1, d.Attempts)
			require.Contains(t, d.Log[0].Error, "no answer within 200ms")
			require.Zero(t, d.Log[0].StatusCode)

			close(release)
			b.sender.CloseIdleConnections()
			// What an attempt starts is the client's connection: its
			// read and write loops must end with it. (Counting all
			// goroutines instead would also count the pools and listeners
			// that start at their own pace on a busy machine.)
			waitFor(t, "the attempt's connection goroutines to end", func() bool { return clientConnGoroutines() == 0 })
		})
	}
}

// clientConnGoroutines counts the goroutines serving client connections of
// net/http's Transport.
func clientConnGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "net/http.(*persistConn)")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Webhook URLs on loopback, private, link-local, metadata and IPv6-mapped
// addresses are refused when saved, and, with that check bypassed, when
// connecting: the recording dialer is never asked to connect.
func TestSSRF(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"https://127.0.0.1/hook",
		"https://localhost/hook",
		"https://10.0.0.7/hook",
		"https://172.16.3.4/hook",
		"https://192.168.1.10/hook",
		"https://169.254.169.254/latest/meta-data",
		"https://[fe80::1]/hook",
		"https://[::1]/hook",
		"https://[::ffff:127.0.0.1]/hook",
		"https://[::ffff:169.254.169.254]/hook",
		"https://[::ffff:a00:1]/hook",
		"https://[fd00::1]/hook",
		"https://2130706433/hook",
		"https://0x7f.0.0.1/hook",
		"https://metadata.rebind.test/hook",
		"https://private.rebind.test/hook",
	}
	resolver := fakeResolver{
		"localhost":            {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		"metadata.rebind.test": {netip.MustParseAddr("169.254.169.254")},
		"private.rebind.test":  {netip.MustParseAddr("::ffff:10.1.2.3")},
	}
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			dialer := &recordingDialer{}
			guard := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: dialer})

			saved := setup(t, dialect, options{guard: guard, noRunner: true})
			for _, u := range forbidden {
				_, err := saved.svc.Put(context.Background(), webhooks.PutInput{AccountID: saved.account, URL: u})
				require.True(t, failure.Is(err, failure.KindInvalid), "%s is refused at save time: %v", u, err)
				require.Contains(t, failure.As(err).Fields[0].Message, "not allowed", u)
			}
			_, err := saved.svc.Put(context.Background(), webhooks.PutInput{AccountID: saved.account, URL: "http://example.com/hook"})
			require.True(t, failure.Is(err, failure.KindInvalid), "plain http to a public host is refused: %v", err)

			bypass := setup(t, dialect, options{guard: guard, noSaveCheck: true, schedule: []time.Duration{0}})
			for i, u := range forbidden {
				_, err := bypass.svc.Put(context.Background(), webhooks.PutInput{AccountID: bypass.account, URL: u})
				require.NoError(t, err, u)
				bypass.emit(t, fmt.Sprintf("thr_%d", i), i)
				waitFor(t, "the delivery to "+u+" to fail", func() bool { return len(bypass.deliveries(t, webhook.Failed)) == i+1 })
				d := bypass.deliveries(t, "")[0]
				require.Contains(t, d.Log[0].Error, httpguard.ErrForbiddenAddress.Error(), u)
			}
			require.Empty(t, dialer.recorded(), "no connection was attempted to a forbidden address")
		})
	}
}

// Replay sends a delivery again with the same webhook-id.
func TestReplay(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			b := setup(t, dialect, options{})
			b.put(t, rc.srv.URL+"/hook")
			b.emit(t, "thr_replay", 1)
			waitFor(t, "the delivery", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == 1 })
			d := b.deliveries(t, "")[0]
			_, err := b.svc.Replay(context.Background(), b.account, d.ID, nil)
			require.NoError(t, err)
			waitFor(t, "the replay", func() bool { return rc.count.Load() == 2 })
			got := rc.requests()
			require.Equal(t, got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"))
			require.Equal(t, got[0].Body, got[1].Body)
			waitFor(t, "the replay to be logged", func() bool {
				d := b.deliveries(t, webhook.Succeeded)
				return len(d) == 1 && len(d[0].Log) == 2
			})
			_, err = b.svc.Replay(context.Background(), b.account, "whk_doesnotexist", nil)
			require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
		})
	}
}

// After a rotation both secrets sign for the overlap.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			b := setup(t, dialect, options{})
			b.put(t, rc.srv.URL+"/hook")
			old := b.secret
			v, err := b.svc.RotateSecret(context.Background(), b.account)
			require.NoError(t, err)
			require.NotEqual(t, old, v.Secret)
			require.True(t, strings.HasPrefix(v.Secret, webhook.SecretPrefix))
			_, err = b.svc.Test(context.Background(), b.account, nil)
			require.NoError(t, err)
			waitFor(t, "the test delivery", func() bool { return rc.count.Load() == 1 })
			r := rc.requests()[0]
			require.NoError(t, verifyStandard(old, r), "the old secret still verifies")
			require.NoError(t, verifyStandard(v.Secret, r), "the new secret verifies")
			require.True(t, verifyLegacy(v.Secret, r), "x-signature uses the new secret")
			require.Equal(t, legacySignature(old, r.Header.Get("x-timestamp"), r.Body), r.Header.Get("x-signature-previous"))
			require.Contains(t, string(r.Body), `"event":"webhook.test"`)
			got, err := b.svc.Get(context.Background(), b.account)
			require.NoError(t, err)
			require.Empty(t, got.Secret, "the secret is shown only when new")
			require.WithinDuration(t, time.Now().Add(webhook.RotationOverlap), got.Endpoint.PreviousUntil, time.Minute)
		})
	}
}

// A secret that cannot be opened (sealed under another server key) fails
// the delivery at once instead of leaving it pending, so the thread's later
// events are not held back behind it.
func TestUnreadableSecretFailsTheDelivery(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			b := setup(t, dialect, options{})
			b.put(t, rc.srv.URL+"/hook")
			r := b.db.WebhookStore()
			rec, err := r.WebhookEndpoint(context.Background(), b.account)
			require.NoError(t, err)
			rec.SealedSecret = []byte("sealed under another key")
			require.NoError(t, r.SaveWebhookEndpoint(context.Background(), rec))
			b.emit(t, "thr_key", 1)
			b.emit(t, "thr_key", 2)
			waitFor(t, "both deliveries to fail", func() bool { return len(b.deliveries(t, webhook.Failed)) == 2 })
			require.Zero(t, rc.count.Load(), "nothing unsigned is sent")
			for _, d := range b.deliveries(t, "") {
				require.Contains(t, d.LastError, "open webhook secret")
			}
		})
	}
}

// An attempt cut off by its process's death (here a process that stopped
// with the delivery claimed, which counts as dead at once) is made again at
// once by the next runner and logged as interrupted: not counted in the
// delivery's attempts, no failure of the endpoint, and the job's attempt
// given back.
func TestInterruptedAttemptIsLoggedNotFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
		b := setup(t, dialect, options{noRunner: true})
		b.put(t, rc.srv.URL+"/hook")
		b.emit(t, "thr_cut", 1)

		p, err := b.db.RegisterProcess(ctx, nil)
		require.NoError(t, err)
		claimedAt := time.Now().UTC().Truncate(time.Microsecond)
		claimed, err := b.db.JobQueue().ClaimJobs(ctx, p.ID(), []jobs.Lease{{Kind: webhooks.DeliverKind, Until: claimedAt.Add(time.Hour)}}, 10, claimedAt, jobs.ClaimFilter{})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, p.Close(ctx))

		b.startRunner(t)
		waitFor(t, "the delivery to succeed", func() bool { return len(b.deliveries(t, webhook.Succeeded)) == 1 })
		require.Len(t, rc.requests(), 1)
		d := b.deliveries(t, "")[0]
		require.Equal(t, 1, d.Attempts, "the interrupted attempt is not counted")
		require.Len(t, d.Log, 2)
		require.True(t, d.Log[0].Interrupted)
		require.Equal(t, claimedAt, d.Log[0].At, "when the cut-off run started")
		require.Equal(t, webhook.InterruptedError, d.Log[0].Error)
		require.False(t, d.Log[1].Interrupted)
		require.Equal(t, http.StatusOK, d.Log[1].StatusCode)
		rec, err := b.db.WebhookStore().WebhookEndpoint(ctx, b.account)
		require.NoError(t, err)
		require.Nil(t, rec.Endpoint.FailingSince, "no failure of the endpoint")
		var attempt int
		require.NoError(t, b.db.Bun().NewRaw("SELECT attempt FROM jobs WHERE id = ?", claimed[0].ID).Scan(ctx, &attempt))
		require.Equal(t, 1, attempt, "the cut-off run used no attempt")
	})
}
