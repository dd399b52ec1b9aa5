// Package email benchmarks the email API of issue 9 through the real server binary:
// accepting sends (Send), and delivering queued emails to an SMTP server on 127.0.0.1
// (Deliver).
//
// Each scenario provisions a deployment of its own (harness.Env.NewDeployment) with
// the bench account and one address on the service domain, created through the API.
// The emails a Deliver slice delivers are written by SQL (harness.SQL) that matches
// what Send stores, untimed, and checked against it at set-up; see seedQueued.
package email

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

const (
	// senderLocal is the local part of the bench account's address.
	senderLocal = "bench.sender"
	// domain is the service's email domain on the bench's servers (see Flags).
	domain = "mail.switchboard.local"
)

// senderAddress is the bench account's address on the service domain.
func senderAddress() string { return senderLocal + "@" + domain }

// Flags are the serve flags every server of an email scenario runs with: the
// service domain the bench's address is on.
func Flags() []string { return []string{"--email-domain", domain} }

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
	api, err := d.Serve(ctx, append(Flags(), "--db-max-conns", strconv.Itoa(s.MaxConns), "--jobs=false")...)
	if err != nil {
		return nil, err
	}
	if err := CreateAddress(ctx, api); err != nil {
		return nil, err
	}
	load, err := NewSendLoad(api, s.Clients)
	if err != nil {
		return nil, err
	}
	return load.Run, nil
}

// NewSendLoad returns a closed loop of workers lean clients that send emails
// through sb from the bench address (see CreateAddress), to 64 recipients in turn.
func NewSendLoad(sb *harness.Switchboard, workers int) (*harness.HTTPLoad, error) {
	var bodies [][]byte
	for i := range 64 {
		bodies = append(bodies, sendBody(i))
	}
	return harness.NewRotatingPostLoad(workers, sb.URL+"/v1/emails/"+sb.AccountID+"/send", sb.Header(), bodies)
}

// sendInput is the i-th bench send.
func sendInput(i int) map[string]any {
	return map[string]any{
		"sender_address": senderAddress(), "recipient_address": fmt.Sprintf("user%d@example.org", i),
		"subject": "Bench email", "body": "<p>Hello from the bench</p>",
		"headers": map[string]any{"cc": "copy@example.org"},
	}
}

// sendBody is the body of the i-th bench send.
func sendBody(i int) []byte {
	b, _ := json.Marshal(sendInput(i))
	return b
}

// SampleBody is a send's body, for scenarios that post it elsewhere.
func SampleBody() []byte { return sendBody(0) }

// Deliver measures delivery: before each slice (untimed) Emails queued emails are
// seeded with their delivery jobs; then a server with jobs on (Workers job workers, a
// pool of MaxConns) and --smtp-url pointing at a go-smtp server in this process
// (SMTPPool connections) is started, and the slice is the time from its readiness
// until every email is sent: accepted by the SMTP server with a 250 and marked sent
// (counted with SQL every 5 ms). The rate is emails delivered per second. The
// server runs only during its slices, never beside the baseline.
type Deliver struct {
	Emails   int
	Workers  int
	MaxConns int
	SMTPPool int
	// Timeout bounds one slice.
	Timeout time.Duration
}

// Setup provisions the deployment and its address, checks the seeding SQL against
// a send through the API, and starts the SMTP server.
func (dl Deliver) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	api, err := d.Serve(ctx, append(Flags(), "--jobs=false", "--db-max-conns", "2")...)
	if err != nil {
		return nil, err
	}
	if err := CreateAddress(ctx, api); err != nil {
		return nil, err
	}
	if err := checkSeed(ctx, api, db); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	smtpSrv, err := startSMTP()
	if err != nil {
		return nil, err
	}
	env.AfterScenario(func() { _ = smtpSrv.Close() })
	dv := &deliverer{Deliver: dl, d: d, db: db, smtp: smtpSrv, env: env, next: 1}
	return dv.slice, nil
}

type deliverer struct {
	Deliver
	d    *harness.Deployment
	db   *harness.SQL
	smtp *smtpServer
	env  *harness.Env
	next int
}

const countSent = "SELECT count(*) FROM emails WHERE status = 'sent'"

func (dv *deliverer) slice(ctx context.Context, _ time.Duration) (harness.Sample, error) {
	if err := dv.db.Exec(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	first := dv.next
	if err := seedQueued(ctx, dv.db, dv.d.AccountID, first, first+dv.Emails-1, time.Now()); err != nil {
		return harness.Sample{}, err
	}
	dv.next += dv.Emails
	if err := dv.db.Exec(ctx, "VACUUM (ANALYZE) jobs, emails"); err != nil {
		return harness.Sample{}, err
	}
	before, err := dv.db.Int(ctx, countSent)
	if err != nil {
		return harness.Sample{}, err
	}
	want := before + dv.Emails
	smtpURL := dv.smtp.URL() + "&pool=" + strconv.Itoa(dv.SMTPPool)
	sb, err := dv.d.Serve(ctx, append(Flags(), "--job-workers", strconv.Itoa(dv.Workers), "--db-max-conns", strconv.Itoa(dv.MaxConns), "--smtp-url", smtpURL)...)
	if err != nil {
		return harness.Sample{}, err
	}
	defer sb.Stop()
	start := time.Now()
	started, err := dv.db.Int(ctx, countSent)
	if err != nil {
		return harness.Sample{}, err
	}
	deadline := start.Add(dv.Timeout)
	var sent int
	for {
		if sent, err = dv.db.Int(ctx, countSent); err != nil {
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
	failed, err := dv.db.Int(ctx, "SELECT count(*) FROM emails WHERE status = 'failed'")
	if err != nil {
		return harness.Sample{}, err
	}
	if failed > 0 {
		s.Failed += failed
		s.FirstFailure = fmt.Sprintf("%d emails failed", failed)
	}
	dv.env.Log.Info("deliver slice", "emails", dv.Emails, "sent", sent-started, "took", elapsed.Round(time.Millisecond),
		"smtp_accepted", dv.smtp.accepted.Load(), "smtp_connections", dv.smtp.conns.Load())
	return s, nil
}

// seqIDSQL is the id of seeded email i (the SQL integer expression): a valid eml_ id
// as long as a generated one.
func seqIDSQL(i string) string { return "'eml_' || lpad((" + i + ")::text, 26, 'a')" }

// seedQueued stores emails first … last as Send stores them, in one transaction:
// queued, from the bench address, an HTML body, one Cc, with the Message-ID on the
// sender's domain; each with its delivery job as Send enqueues it (kind
// email.deliver, the id in the payload, 16 attempts, no unique key, no pace key,
// the account's, no endpoint).
// checkSeed holds it to what the server writes.
func seedQueued(ctx context.Context, db *harness.SQL, accountID string, first, last int, now time.Time) error {
	ts := harness.Quote(now.UTC().Format(time.RFC3339Nano)) + "::timestamptz"
	// The job names the account, so that the claims bound the account's share as
	// they do for sends; a build from before the column has none. An email without
	// an attachment has no endpoint.
	fairColumn, fairValue := ", account_id", ", "+harness.Quote(accountID)
	if fair, err := harness.JobsNameAccounts(ctx, db); err != nil {
		return err
	} else if !fair {
		fairColumn, fairValue = "", ""
	}
	return db.Exec(ctx, fmt.Sprintf(`BEGIN;
		INSERT INTO emails (id, account_id, from_address, to_address, cc, bcc, reply_to, subject, body, html,
			headers, attachment_uri, message_id, status, reply, failure_code, attempts, created_at, updated_at)
		SELECT %[1]s, %[2]s, %[3]s, 'user' || (i %% 64) || '@example.org', '["copy@example.org"]', '[]', '[]',
			'Bench email', '<p>Hello from the bench</p>', true, '[]', '', '<' || %[1]s || '@' || %[4]s || '>',
			'queued', '', '', 0, %[5]s, %[5]s
		FROM generate_series(%[6]d::bigint, %[7]d::bigint) AS i;
		INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key%[10]s, run_at, created_at)
		SELECT 'email.deliver', 'available', convert_to('{"email_id":"' || %[1]s || '"}', 'UTF8'), %[8]d, NULL, NULL%[11]s, %[9]d, %[9]d
		FROM generate_series(%[6]d::bigint, %[7]d::bigint) AS i
		ORDER BY i;
		COMMIT;`,
		seqIDSQL("i"), harness.Quote(accountID), harness.Quote(senderAddress()), harness.Quote(domain), ts,
		first, last, deliveryAttempts, now.UnixMicro(), fairColumn, fairValue))
}

// deliveryAttempts is how many attempts Send gives an email's delivery job.
const deliveryAttempts = 16

// checkSeed holds seedQueued to the server: it sends one email through sb (an
// API-only server, so the email stays queued), seeds email 0 to the same
// recipient, compares the two emails and their delivery jobs column by column
// (ids and times aside), and deletes all four rows.
func checkSeed(ctx context.Context, sb *harness.Switchboard, db *harness.SQL) error {
	var sent struct {
		EmailID string `json:"email_id"`
	}
	if err := harness.PostJSON(ctx, sb.URL+"/v1/emails/"+sb.AccountID+"/send", sb.Header(), sendInput(0), &sent); err != nil {
		return fmt.Errorf("check the seeding SQL: %w", err)
	}
	if err := seedQueued(ctx, db, sb.AccountID, 0, 0, time.Now()); err != nil {
		return err
	}
	seeded, err := db.String(ctx, "SELECT "+seqIDSQL("0"))
	if err != nil {
		return err
	}
	email := func(id string) harness.Row {
		return harness.Row{From: "emails", Where: "id = " + harness.Quote(id), IDs: []string{id}}
	}
	if err := db.RowsAlike(ctx, "seeded email", email(sent.EmailID), email(seeded), "created_at", "updated_at"); err != nil {
		return err
	}
	job := func(id string) harness.Row {
		return harness.Row{From: jobsWithPayload, Where: "strpos(payload_text, " + harness.Quote(id) + ") > 0", IDs: []string{id}}
	}
	if err := db.RowsAlike(ctx, "seeded email delivery job", job(sent.EmailID), job(seeded), "id", "payload", "run_at", "created_at"); err != nil {
		return err
	}
	ids := harness.QuoteList([]string{sent.EmailID, seeded})
	return db.Exec(ctx, `DELETE FROM jobs WHERE kind = 'email.deliver';
		DELETE FROM emails WHERE id IN `+ids)
}

// jobsWithPayload is the jobs table with each payload as text too.
const jobsWithPayload = "(SELECT *, convert_from(payload, 'UTF8') AS payload_text FROM jobs)"

// CreateAddress creates the bench sender address through the API.
func CreateAddress(ctx context.Context, sb *harness.Switchboard) error {
	return createAddress(ctx, sb, senderLocal)
}

// createAddress creates local@domain for the bench account through the API.
func createAddress(ctx context.Context, sb *harness.Switchboard, local string) error {
	b, _ := json.Marshal(map[string]string{"address": local, "domain_name": domain})
	if err := harness.CallAPI(ctx, http.MethodPost, sb.URL+"/v1/emails/"+sb.AccountID+"/create-email", sb.Header(), b, nil); err != nil {
		return fmt.Errorf("create the bench address %s: %w", local, err)
	}
	return nil
}
