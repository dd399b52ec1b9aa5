// Package messaging benchmarks the messaging API of issue 4 through the real server
// binary: sending to users (Send), reading messages and threads back (Read), and
// delivering queued messages through the sandbox provider (Dispatch).
//
// Each scenario provisions a deployment of its own (harness.Env.NewDeployment): a new
// Postgres database, migrated, with the bench account and its sandbox WhatsApp
// numbers, dropped when the scenario ends. Rows the API would take too long to create
// (a million messages to read, a hundred thousand to deliver) are written by SQL that
// matches what the use cases write, untimed; see seed.go.
//
// Postgres allows 100 connections. A server's pool stays open between slices, while a
// pgbench baseline at 64 clients runs, so pools here are sized to leave room for
// that, the harness's own connections and the run's shared server (8); see each
// scenario's MaxConns.
package messaging

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

const (
	// service is the channel every scenario uses.
	service = "whatsapp"
	// body is the text of every message.
	body = "bench message"
)

// agentNumber is the E.164 number of the bench account's agent number k (k < 10^7 - 1),
// the same in Go and in the seeding SQL (agentNumberSQL): +15550000001 is number 0.
func agentNumber(k int) string { return fmt.Sprintf("+1555%07d", 1+k) }

// agentNumberSQL is agentNumber of the SQL integer expression k.
func agentNumberSQL(k string) string { return "'+1555' || lpad((1 + " + k + ")::text, 7, '0')" }

// userNumber is the E.164 number of bench user k (k < 10^7), the same in Go and in
// the seeding SQL (userNumberSQL).
func userNumber(k int) string { return fmt.Sprintf("+1556%07d", k) }

// userNumberSQL is userNumber of the SQL integer expression k.
func userNumberSQL(k string) string { return "'+1556' || lpad((" + k + ")::text, 7, '0')" }

// seqID is the id with the given prefix ("msg", "thr") of seeded row i: i in decimal,
// left-padded with 'a' to the 26 characters of a generated id. It passes ident.Valid
// and differs for each i (no decimal number starts with an 'a'); that a generated id
// is one of them has a chance of one in 32^26 or so.
func seqID(prefix string, i int) string {
	d := fmt.Sprint(i)
	return prefix + "_" + strings.Repeat("a", max(0, 26-len(d))) + d
}

// seqIDSQL is seqID of the SQL integer expression i.
func seqIDSQL(prefix, i string) string {
	return "'" + prefix + "_' || lpad((" + i + ")::text, 26, 'a')"
}

// openDB opens a small pool on a deployment's database for the scenario's own SQL:
// seeding, counts and statistics. It is closed when the scenario ends, before the
// database is dropped. Seeding a million messages is one long statement, which
// the server's 8 s statement timeout would cancel on a busy machine.
func openDB(ctx context.Context, env *harness.Env, d *harness.Deployment) (*store.DB, error) {
	db, err := store.Open(ctx, d.DatabaseURL, store.Options{MaxConns: 2, StatementTimeout: 9 * time.Minute, ReadTimeout: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = db.Close() })
	return db, nil
}

// addNumbers adds enabled sandbox agent numbers 0 … n-1 (agentNumber) to the bench
// account through the accounts use case, in this process, with the deployment's server
// key: what `switchboard numbers add` does, without a process per number.
func addNumbers(ctx context.Context, d *harness.Deployment, db *store.DB, n int) error {
	keys, err := bootstrap.Config{SecretKey: d.SecretKey, DatabaseURL: d.DatabaseURL}.Keyring()
	if err != nil {
		return err
	}
	svc := accounts.NewService(store.Bind(db, func(r *store.Repos) accounts.Repos { return r }), keys, accounts.Options{})
	for k := range n {
		if _, err := svc.AddNumber(ctx, accounts.NumberInput{
			AccountID: d.AccountID, Number: agentNumber(k), Service: service, Provider: "sandbox", Enabled: true,
		}); err != nil {
			return fmt.Errorf("add number %s: %w", agentNumber(k), err)
		}
	}
	return nil
}

// exec runs statements one by one, outside a transaction, so VACUUM may be among
// them.
func exec(ctx context.Context, db *store.DB, stmts ...string) error {
	for _, q := range stmts {
		if _, err := db.Bun().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
	}
	return nil
}

// count runs a query that returns one integer.
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

// conversation is a user and the agent number that user writes to.
type conversation struct{ user, agent string }

// writeFirst has the user of each conversation send its agent number a message
// through the sandbox inbound route, as a user must before the agent may write to
// them; concurrently, untimed.
func writeFirst(ctx context.Context, sb *harness.Switchboard, convs []conversation) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	url := sb.URL + "/v1/sandbox/" + sb.AccountID + "/inbound"
	next := make(chan conversation)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for c := range next {
				b, _ := json.Marshal(map[string]string{"service": service, "from": c.user, "to": c.agent, "message": "hi"})
				req, err := harness.Post(url, sb.Header(), b)(ctx)
				if err == nil {
					err = expect2xx(client, req)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("user %s writes first: %w", c.user, err):
					default:
					}
				}
			}
		})
	}
	for _, c := range convs {
		next <- c
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// expect2xx sends req and fails on anything but a 2xx answer.
func expect2xx(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", req.Method, req.URL.Path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
