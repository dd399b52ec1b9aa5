// Package email benchmarks the email API of issue 9 through the real server binary:
// accepting sends (Send), and delivering queued emails to an SMTP server on 127.0.0.1
// through the SMTP adapter (Deliver).
//
// Each scenario provisions a deployment of its own (harness.Env.NewDeployment) with
// the bench account and one address on the service domain, created through the API.
// The emails a Deliver slice delivers are written by SQL that matches what Send
// stores, untimed; see seedQueued.
package email

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/bootstrap"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// senderLocal is the local part of the bench account's address.
const senderLocal = "bench.sender"

// senderAddress is the bench account's address on the server's default domain.
func senderAddress() string { return senderLocal + "@" + bootstrap.Defaults().EmailDomain }

// Send measures POST /v1/emails/{account_id}/send: Clients concurrent clients in a
// closed loop against a server that only serves the API (--jobs=false), so that
// delivery does not compete with accepting. Each accepted send is one transaction
// that stores the email and its delivery job.
type Send struct {
	Clients int
	// MaxConns is the server's pool (--db-max-conns); it stays open beside pgbench's
	// 64 clients, so it is bounded by Postgres's 100 connections.
	MaxConns int
}

// Setup provisions the deployment, starts the API-only server, creates the sender
// address and returns the closed-loop slice.
func (s Send) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	api, err := d.Serve(ctx, "--db-max-conns", strconv.Itoa(s.MaxConns), "--jobs=false")
	if err != nil {
		return nil, err
	}
	if err := createAddress(ctx, api); err != nil {
		return nil, err
	}
	var bodies [][]byte
	for i := range 64 {
		bodies = append(bodies, sendBody(i))
	}
	load, err := harness.NewRotatingPostLoad(s.Clients, api.URL+"/v1/emails/"+api.AccountID+"/send", api.Header(), bodies)
	if err != nil {
		return nil, err
	}
	return load.Run, nil
}

// sendBody is the body of the i-th bench send.
func sendBody(i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"sender_address": senderAddress(), "recipient_address": fmt.Sprintf("user%d@example.org", i),
		"subject": "Bench email", "body": "<p>Hello from the bench</p>",
		"headers": map[string]any{"cc": "copy@example.org"},
	})
	return b
}

// SampleBody is a send's body, for scenarios that post it elsewhere.
func SampleBody() []byte { return sendBody(0) }

// Deliver measures delivery: before each slice (untimed) Emails queued emails are
// seeded with their delivery jobs; then a server with jobs on (Workers job workers, a
// pool of MaxConns) and SWITCHBOARD_SMTP_URL pointing at a go-smtp server in this
// process (SMTPPool connections) is started, and the slice is the time from its
// readiness until every email is sent: accepted by the SMTP server with a 250 and
// marked sent. The rate is emails delivered per second. The server runs only during
// its slices, never beside the baseline.
type Deliver struct {
	Emails   int
	Workers  int
	MaxConns int
	SMTPPool int
	// Timeout bounds one slice.
	Timeout time.Duration
}

// Setup provisions the deployment and its address, and starts the SMTP server.
func (dl Deliver) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	api, err := d.Serve(ctx, "--jobs=false", "--db-max-conns", "2")
	if err != nil {
		return nil, err
	}
	if err := createAddress(ctx, api); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, d.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = db.Close() })
	smtpSrv, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = smtpSrv.Close() })
	dv := &deliverer{Deliver: dl, d: d, db: db, smtp: smtpSrv, env: env}
	return dv.slice, nil
}

type deliverer struct {
	Deliver
	d    *harness.Deployment
	db   *store.DB
	smtp *smtptest.Server
	env  *harness.Env
	next int
}

const countSent = "SELECT count(*) FROM emails WHERE status = 'sent'"

func (dv *deliverer) slice(ctx context.Context, _ time.Duration) (harness.Sample, error) {
	if err := exec(ctx, dv.db, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	first := dv.next
	if err := seedQueued(ctx, dv.db, dv.d.AccountID, first, first+dv.Emails-1, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
		return harness.Sample{}, err
	}
	dv.next += dv.Emails
	if err := exec(ctx, dv.db, "VACUUM (ANALYZE) jobs, emails"); err != nil {
		return harness.Sample{}, err
	}
	before, err := count(ctx, dv.db, countSent)
	if err != nil {
		return harness.Sample{}, err
	}
	want := before + dv.Emails
	smtpURL := dv.smtp.URL() + "&pool=" + strconv.Itoa(dv.SMTPPool)
	sb, err := dv.d.Serve(ctx, "--job-workers", strconv.Itoa(dv.Workers), "--db-max-conns", strconv.Itoa(dv.MaxConns), "--smtp-url", smtpURL)
	if err != nil {
		return harness.Sample{}, err
	}
	defer sb.Stop()
	start := time.Now()
	started, err := count(ctx, dv.db, countSent)
	if err != nil {
		return harness.Sample{}, err
	}
	deadline := start.Add(dv.Timeout)
	var sent int
	for {
		if sent, err = count(ctx, dv.db, countSent); err != nil {
			return harness.Sample{}, err
		}
		if sent >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := sb.Stop(); err != nil {
		return harness.Sample{}, err
	}
	s := harness.Sample{Ops: sent - started, Elapsed: elapsed}
	if sent < want {
		s.Failed = want - sent
		s.FirstFailure = fmt.Sprintf("%d of %d emails not sent within %s", want-sent, dv.Emails, dv.Timeout)
	}
	failed, err := count(ctx, dv.db, "SELECT count(*) FROM emails WHERE status = 'failed'")
	if err != nil {
		return harness.Sample{}, err
	}
	if failed > 0 {
		s.Failed += failed
		s.FirstFailure = fmt.Sprintf("%d emails failed", failed)
	}
	dv.env.Log.Info("deliver slice", "emails", dv.Emails, "sent", sent-started, "took", elapsed.Round(time.Millisecond),
		"smtp_accepted", dv.smtp.Accepted(), "smtp_connections", dv.smtp.Connections())
	return s, nil
}

// seqID is the id of seeded email i, a valid eml_ id as long as a generated one.
func seqIDSQL(i string) string { return "'eml_' || lpad((" + i + ")::text, 26, 'a')" }

// seedQueued stores emails first … last as Send stores them: queued, from the bench
// address, an HTML body, one Cc, with the Message-ID on the sender's domain; each
// with its delivery job as Send enqueues it (kind email.deliver, the id in the
// payload, DeliveryAttempts attempts, no unique key, no pace key).
func seedQueued(ctx context.Context, db *store.DB, accountID string, first, last int, now time.Time) error {
	domain := bootstrap.Defaults().EmailDomain
	emails := fmt.Sprintf(`
		INSERT INTO emails (id, account_id, from_address, to_address, cc, bcc, reply_to, subject, body, html,
			headers, attachment_uri, message_id, status, reply, failure_code, attempts, created_at, updated_at)
		SELECT %s, ?0, ?1, 'user' || (i %% 64) || '@example.org', '["copy@example.org"]', '[]', '[]',
			'Bench email', '<p>Hello from the bench</p>', true, '[]', '', '<' || %s || '@' || ?2 || '>',
			'queued', '', '', 0, ?3, ?3
		FROM generate_series(?4::bigint, ?5::bigint) AS i`, seqIDSQL("i"), seqIDSQL("i"))
	jobsQ := fmt.Sprintf(`
		INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key, run_at, created_at)
		SELECT ?0, ?1, convert_to('{"email_id":"' || e.id || '"}', 'UTF8'), ?2, NULL, NULL, ?3, ?3
		FROM generate_series(?4::bigint, ?5::bigint) AS i
		CROSS JOIN LATERAL (SELECT %s AS id) AS e
		ORDER BY i`, seqIDSQL("i"))
	return db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, emails, accountID, senderAddress(), domain, now, first, last); err != nil {
			return fmt.Errorf("seed queued emails: %w", err)
		}
		if _, err := tx.ExecContext(ctx, jobsQ, appemail.DeliverKind, jobs.StateAvailable, appemail.DeliveryAttempts, now.UnixMicro(), first, last); err != nil {
			return fmt.Errorf("seed delivery jobs: %w", err)
		}
		return nil
	})
}

// createAddress creates the bench sender address through the API.
func createAddress(ctx context.Context, sb *harness.Switchboard) error {
	b, _ := json.Marshal(map[string]string{"address": senderLocal, "domain_name": bootstrap.Defaults().EmailDomain})
	req, err := harness.Post(sb.URL+"/v1/emails/"+sb.AccountID+"/create-email", sb.Header(), b)(ctx)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("create the bench address: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
}

func exec(ctx context.Context, db *store.DB, stmts ...string) error {
	for _, q := range stmts {
		if _, err := db.Bun().ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func count(ctx context.Context, db *store.DB, query string) (int, error) {
	var n int
	if err := db.Bun().NewRaw(query).Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("%s: %w", query, err)
	}
	return n, nil
}
