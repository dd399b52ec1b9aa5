package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Fanout measures how fast the server's job runner delivers webhooks: the pending
// deliveries of at least MinQueued inbound messages (10,000 by default), one per
// user, each in its own thread so the per-thread ordering never waits, posted to the
// receiver, which answers at once. What is timed is delivery itself: claim, the
// handler's reads, opening the secret, signing, the POST, the attempt's log row and
// status update in one transaction, the completion.
//
// Each slice, like messages-dispatch's, first (untimed) deletes completed jobs, tops
// the pending deliveries up with SQL that writes what Receive and the fan-out write
// in its transaction (the message.received event, its delivery and the delivery job;
// see seed), and vacuums; then starts a server with jobs on, waits Settle, counts the
// succeeded deliveries, waits the slice, counts again and stops the server. The
// VACUUM that follows is timed: the dead rows are the slice's own cost.
type Fanout struct {
	MinQueued int
	Workers   int
	MaxConns  int
	Settle    time.Duration
}

// Setup provisions the deployment, starts the receiver, sets the webhook and checks
// the seeding SQL against the server (checkSeed).
func (f Fanout) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(false)
	if err != nil {
		return nil, err
	}
	if err := d.SetWebhook(ctx, d.AccountID, rc.URL); err != nil {
		return nil, err
	}
	keyed, err := checkSeed(ctx, d, db)
	if err != nil {
		return nil, err
	}
	fo := &fanouter{Fanout: f, d: d, db: db, rc: rc, next: 1, log: env.Log, keyed: keyed}
	return fo.slice, nil
}

type fanouter struct {
	Fanout
	d       *harness.Deployment
	db      *harness.SQL
	rc      *harness.Receiver
	log     *slog.Logger
	next    int
	fastest float64
	// keyed is whether the server's delivery jobs carry a unique key (builds
	// before the one door for writes did).
	keyed bool
}

const (
	countSucceeded = "SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'"
	countPending   = "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'"
	countTrouble   = "SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'failed' OR attempts > 1) + (SELECT count(*) FROM jobs WHERE state = 'dead')"
)

func (fo *fanouter) slice(ctx context.Context, dur time.Duration) (harness.Sample, error) {
	if err := fo.db.Exec(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	want := max(fo.MinQueued, int(math.Ceil(2*fo.fastest*dur.Seconds())))
	pending, err := fo.db.Int(ctx, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	if need := want - pending; need > 0 {
		if err := seed(ctx, fo.db, fo.d.AccountID, fo.next, fo.next+need-1, time.Now(), fo.keyed); err != nil {
			return harness.Sample{}, err
		}
		fo.next += need
	}
	if err := fo.db.Exec(ctx, "VACUUM (ANALYZE) jobs, webhook_deliveries, webhook_attempts, events"); err != nil {
		return harness.Sample{}, err
	}
	trouble, err := fo.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, err
	}
	flags := append([]string{"--job-workers", strconv.Itoa(fo.Workers), "--db-max-conns", strconv.Itoa(fo.MaxConns)}, harness.AllowLoopback...)
	sb, err := fo.d.Serve(ctx, flags...)
	if err != nil {
		return harness.Sample{}, err
	}
	defer sb.Stop()
	if err := sleep(ctx, fo.Settle); err != nil {
		return harness.Sample{}, err
	}
	start := time.Now()
	before, err := fo.db.Int(ctx, countSucceeded)
	if err != nil {
		return harness.Sample{}, err
	}
	received := fo.rc.Count()
	if err := sleep(ctx, dur-time.Since(start)); err != nil {
		return harness.Sample{}, err
	}
	counted := time.Since(start)
	after, err := fo.db.Int(ctx, countSucceeded)
	if err != nil {
		return harness.Sample{}, err
	}
	posts := fo.rc.Count() - received
	if err := sb.Stop(); err != nil {
		return harness.Sample{}, err
	}
	vacuumed := time.Now()
	if err := fo.db.Exec(ctx, "VACUUM jobs, webhook_deliveries, webhook_attempts"); err != nil {
		return harness.Sample{}, err
	}
	vacuum := time.Since(vacuumed)
	fo.log.Info("webhook fan-out slice", "counted", counted.Round(time.Millisecond), "vacuum", vacuum.Round(time.Millisecond),
		"succeeded", after-before, "posts_received", posts)

	s := harness.Sample{Ops: after - before, Elapsed: counted + vacuum}
	left, err := fo.db.Int(ctx, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	if left == 0 {
		return harness.Sample{}, fmt.Errorf("the deliveries ran out: the rate says only that it was at least %.0f deliveries/s", s.Rate())
	}
	fo.fastest = max(fo.fastest, s.Rate())
	troubleAfter, err := fo.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, err
	}
	if n := troubleAfter - trouble; n > 0 {
		s.Failed = n
		s.FirstFailure = fmt.Sprintf("%d deliveries failed or needed a retry", n)
	}
	return s, nil
}

// seed writes, for inbound messages first … last (user i writes once, in thread i),
// what Receive and the webhook fan-out write in its transaction: the
// message.received event with its payload, the pending delivery and its job (paced
// by the thread, due now, with the unique key whk:<delivery id> when keyed, as
// builds before 2026-11-26 wrote it, else none). Ids are the prefix and i left-padded
// with 'a' to 26 characters. checkSeed holds it to what the server writes.
func seed(ctx context.Context, db *harness.SQL, accountID string, first, last int, now time.Time, keyed bool) error {
	now = now.UTC().Truncate(time.Microsecond)
	id := func(prefix string) string { return "'" + prefix + "_' || lpad(i::text, 26, 'a')" }
	account, series := harness.Quote(accountID), fmt.Sprintf("generate_series(%d, %d) AS i", first, last)
	at := harness.Quote(now.Format(time.RFC3339Nano)) + "::timestamptz"
	events := `
		INSERT INTO events (id, account_id, type, thread_id, payload, created_at)
		SELECT ` + id("evt") + `, ` + account + `, 'message.received', ` + id("thr") + `,
			json_build_object('event', 'message.received', 'event_id', ` + id("evt") + `, 'thread_id', ` + id("thr") + `,
				'message_id', ` + id("msg") + `, 'thread_type', 'individual', 'sender_number', '+1556' || lpad(i::text, 7, '0'),
				'sender_name', '', 'a1_account_id', ` + account + `, 'a1_phone_number', '+15550000001', 'timestamp', ` + harness.Quote(now.Format(time.RFC3339Nano)) + `,
				'service', 'whatsapp', 'message_type', 'text', 'is_from_agent', false, 'agent_mentioned', true,
				'message_content', json_build_object('text', 'bench message'), 'content', 'bench message',
				'status', 'received', 'direction', 'inbound', 'recipient_number', '+15550000001')::text, ` + at + `
		FROM ` + series + `;`
	deliveries := `
		INSERT INTO webhook_deliveries (id, account_id, event_id, event_type, thread_id, status, attempts,
			last_status_code, last_error, next_attempt_at, created_at, updated_at)
		SELECT ` + id("whk") + `, ` + account + `, ` + id("evt") + `, 'message.received', ` + id("thr") + `, 'pending', 0, 0, '', ` + at + `, ` + at + `, ` + at + `
		FROM ` + series + `;`
	// The account and endpoint as webhooks.EndpointKey names them, so
	// that the runner bounds the seeded deliveries as it bounds the
	// fan-out's.
	fairColumns, fairValues := ", account_id, endpoint_key", ", "+account+", 'webhook:' || "+account
	if fair, err := harness.JobsNameAccounts(ctx, db); err != nil {
		return err
	} else if !fair {
		fairColumns, fairValues = "", ""
	}
	micros := fmt.Sprint(now.UnixMicro())
	uniqueKey := "NULL"
	if keyed {
		uniqueKey = "'whk:' || " + id("whk")
	}
	jobs := `
		INSERT INTO jobs (kind, state, payload, attempt, max_attempts, unique_key, pace_key` + fairColumns + `, run_at, created_at)
		SELECT 'webhook.deliver', 'available', convert_to('{"delivery_id":"' || ` + id("whk") + ` || '"}', 'UTF8'),
			0, 10000, ` + uniqueKey + `, 'whk:' || ` + account + ` || ':' || ` + id("thr") + fairValues + `, ` + micros + `, ` + micros + `
		FROM ` + series + `;`
	if err := db.Exec(ctx, "BEGIN;"+events+deliveries+jobs+"COMMIT;"); err != nil {
		return fmt.Errorf("seed deliveries: %w", err)
	}
	return nil
}

// seedAgent is the agent number of the seeded events, seedUser the number of user 0.
const (
	seedAgent = "+15550000001"
	seedUser  = "+15560000000"
)

// checkSeed holds seed to the server: user 0 writes to the agent number through the
// sandbox inbound route of an API-only server (so the delivery stays pending), and
// inbound message 0 is seeded; the two events (their columns, then their payloads'
// fields), deliveries and delivery jobs are compared (ids and times aside), and
// deleted. It adds the agent number to the bench account.
func checkSeed(ctx context.Context, d *harness.Deployment, db *harness.SQL) (keyed bool, err error) {
	if _, err := d.AddNumber(ctx, seedAgent, "whatsapp", "sandbox"); err != nil {
		return false, err
	}
	api, err := d.Serve(ctx, append(harness.AllowLoopback, "--jobs=false", "--db-max-conns", "2")...)
	if err != nil {
		return false, err
	}
	defer api.Stop()
	in := map[string]string{"service": "whatsapp", "from": seedUser, "to": seedAgent, "content": "bench message"}
	if err := harness.PostJSON(ctx, api.URL+"/v1/sandbox/"+api.AccountID+"/inbound", api.Header(), in, nil); err != nil {
		return false, fmt.Errorf("check the seeding SQL: %w", err)
	}
	keyedJobs, err := db.Int(ctx, `SELECT count(*) FROM jobs WHERE kind = 'webhook.deliver' AND unique_key IS NOT NULL`)
	if err != nil {
		return false, err
	}
	keyed = keyedJobs > 0
	if err := seed(ctx, db, d.AccountID, 0, 0, time.Now(), keyed); err != nil {
		return false, err
	}
	// Each event's id, thread, message, delivery and the time in its payload: what
	// differs between the two.
	rows, err := db.Rows(ctx, `SELECT e.id, e.thread_id, e.payload::jsonb->>'message_id', w.id, e.payload::jsonb->>'timestamp'
		FROM events e JOIN webhook_deliveries w ON w.event_id = e.id
		WHERE e.type = 'message.received' ORDER BY e.id <> 'evt_' || lpad('0', 26, 'a')`)
	if err != nil {
		return false, err
	}
	if len(rows) != 2 || len(rows[0]) != 5 || len(rows[1]) != 5 {
		return false, fmt.Errorf("check the seeding SQL: %d received events with deliveries, want the server's and the seeded one", len(rows))
	}
	seeded, served := rows[0], rows[1]
	pair := func(from, where string, ids func(r []string) []string, value string) (harness.Row, harness.Row) {
		row := func(r []string) harness.Row {
			return harness.Row{From: from, Where: fmt.Sprintf(where, harness.Quote(r[0]), harness.Quote(r[3])), IDs: ids(r), Value: value}
		}
		return row(served), row(seeded)
	}
	all := func(r []string) []string { return r }
	a, b := pair("events", "id = %[1]s", all, "")
	if err := db.RowsAlike(ctx, "seeded event", a, b, "seq", "created_at", "payload"); err != nil {
		return false, err
	}
	a, b = pair("events", "id = %[1]s", all, "t.payload::jsonb")
	if err := db.RowsAlike(ctx, "seeded event's payload", a, b); err != nil {
		return false, err
	}
	a, b = pair("webhook_deliveries", "id = %[2]s", all, "")
	if err := db.RowsAlike(ctx, "seeded delivery", a, b, "seq", "created_at", "updated_at", "next_attempt_at"); err != nil {
		return false, err
	}
	a, b = pair("(SELECT *, convert_from(payload, 'UTF8') AS payload_text FROM jobs)", "strpos(payload_text, %[2]s) > 0", all, "")
	if err := db.RowsAlike(ctx, "seeded delivery job", a, b, "id", "payload", "run_at", "created_at"); err != nil {
		return false, err
	}
	if err := db.Exec(ctx, `DELETE FROM jobs WHERE kind = 'webhook.deliver';
		DELETE FROM webhook_deliveries; DELETE FROM events WHERE type = 'message.received'`); err != nil {
		return false, err
	}
	return keyed, api.Stop()
}
