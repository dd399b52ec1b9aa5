// Package webhooks benchmarks customer webhook delivery (issue 7) through the real
// server binary: how many deliveries per second its job runner makes to a receiver on
// 127.0.0.1 (Fanout, against the pgbench insert baseline), and how long an inbound
// sandbox message takes from the inbound request to its delivery at 100 messages per
// second (Latency), and how long one account's deliveries and sends take beside a
// noisy account whose receivers hang (Noisy).
//
// The receiver runs in the bench process: it answers 204 at once and notes when each
// payload arrived, by message id. The account's webhook points at it over plain http,
// which the servers allow with --allow-private-urls 127.0.0.1/32.
package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/bench/harness"
)

// allowLoopback is the flag that lets the servers post to the receiver.
var allowLoopback = []string{"--allow-private-urls", "127.0.0.1/32"}

// receiver counts deliveries and notes when each message's first delivery arrived.
type receiver struct {
	srv *http.Server
	url string
	// track notes arrivals by message id (the latency scenario); the
	// fan-out scenario only counts, to spend less of the machine here.
	track    bool
	count    atomic.Int64
	mu       sync.Mutex
	arrivals map[string]time.Time
}

func startReceiver(env *harness.Env, track bool) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String() + "/hook", track: track, arrivals: map[string]time.Time{}}
	rc.srv = &http.Server{Handler: http.HandlerFunc(rc.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
	env.AfterScenario(func() { _ = rc.srv.Close() })
	return rc, nil
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	rc.count.Add(1)
	w.WriteHeader(http.StatusNoContent)
	if !rc.track {
		return
	}
	var p struct {
		MessageID string `json:"message_id"`
	}
	if json.Unmarshal(body, &p) == nil && p.MessageID != "" {
		rc.mu.Lock()
		if _, seen := rc.arrivals[p.MessageID]; !seen {
			rc.arrivals[p.MessageID] = at
		}
		rc.mu.Unlock()
	}
}

// take removes and returns the arrival of message id.
func (rc *receiver) take(id string) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	at, ok := rc.arrivals[id]
	delete(rc.arrivals, id)
	return at, ok
}

// setWebhook points the webhook of account (one of the deployment's) at url
// with `switchboard webhook set`, the operator command.
func setWebhook(ctx context.Context, d *harness.Deployment, account, url string) error {
	_, err := d.Command(ctx, append([]string{"webhook", "set", "--account", account, "--url", url}, allowLoopback...)...)
	return err
}

// openDB opens a small pool on a deployment's database for the scenario's own SQL,
// closed when the scenario ends.
func openDB(ctx context.Context, env *harness.Env, d *harness.Deployment) (*store.DB, error) {
	db, err := store.Open(ctx, d.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = db.Close() })
	return db, nil
}

func exec(ctx context.Context, db *store.DB, stmts ...string) error {
	for _, q := range stmts {
		if _, err := db.Bun().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
	}
	return nil
}

func count(ctx context.Context, db *store.DB, query string, args ...any) (int, error) {
	var n int
	if err := db.Bun().NewRaw(query, args...).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("%s: %w", firstLine(query), err)
	}
	return n, nil
}

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if line, _, ok := strings.Cut(q, "\n"); ok {
		return line + " …"
	}
	return q
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
