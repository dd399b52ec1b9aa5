package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
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

// Setup provisions the deployment, starts the receiver and sets the webhook.
func (f Fanout) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, env, d)
	if err != nil {
		return nil, err
	}
	rc, err := startReceiver(env, false)
	if err != nil {
		return nil, err
	}
	if err := setWebhook(ctx, d, d.AccountID, rc.url); err != nil {
		return nil, err
	}
	fo := &fanouter{Fanout: f, d: d, db: db, rc: rc, next: 1, log: env.Log}
	return fo.slice, nil
}

type fanouter struct {
	Fanout
	d       *harness.Deployment
	db      *store.DB
	rc      *receiver
	log     *slog.Logger
	next    int
	fastest float64
}

const (
	countSucceeded = "SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'"
	countPending   = "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'"
	countTrouble   = "SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'failed' OR attempts > 1) + (SELECT count(*) FROM jobs WHERE state = 'dead')"
)

func (fo *fanouter) slice(ctx context.Context, dur time.Duration) (harness.Sample, error) {
	if err := exec(ctx, fo.db, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	want := max(fo.MinQueued, int(math.Ceil(2*fo.fastest*dur.Seconds())))
	pending, err := count(ctx, fo.db, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	if need := want - pending; need > 0 {
		if err := seed(ctx, fo.db, fo.d.AccountID, fo.next, fo.next+need-1, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
			return harness.Sample{}, err
		}
		fo.next += need
	}
	if err := exec(ctx, fo.db, "VACUUM (ANALYZE) jobs, webhook_deliveries, webhook_attempts, events"); err != nil {
		return harness.Sample{}, err
	}
	trouble, err := count(ctx, fo.db, countTrouble)
	if err != nil {
		return harness.Sample{}, err
	}
	flags := append([]string{"--job-workers", strconv.Itoa(fo.Workers), "--db-max-conns", strconv.Itoa(fo.MaxConns)}, allowLoopback...)
	sb, err := fo.d.Serve(ctx, flags...)
	if err != nil {
		return harness.Sample{}, err
	}
	defer sb.Stop()
	if err := sleep(ctx, fo.Settle); err != nil {
		return harness.Sample{}, err
	}
	start := time.Now()
	before, err := count(ctx, fo.db, countSucceeded)
	if err != nil {
		return harness.Sample{}, err
	}
	received := fo.rc.count.Load()
	if err := sleep(ctx, dur-time.Since(start)); err != nil {
		return harness.Sample{}, err
	}
	counted := time.Since(start)
	after, err := count(ctx, fo.db, countSucceeded)
	if err != nil {
		return harness.Sample{}, err
	}
	posts := fo.rc.count.Load() - received
	if err := sb.Stop(); err != nil {
		return harness.Sample{}, err
	}
	vacuumed := time.Now()
	if err := exec(ctx, fo.db, "VACUUM jobs, webhook_deliveries, webhook_attempts"); err != nil {
		return harness.Sample{}, err
	}
	vacuum := time.Since(vacuumed)
	fo.log.Info("webhook fan-out slice", "counted", counted.Round(time.Millisecond), "vacuum", vacuum.Round(time.Millisecond),
		"succeeded", after-before, "posts_received", posts)

	s := harness.Sample{Ops: after - before, Elapsed: counted + vacuum}
	left, err := count(ctx, fo.db, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	if left == 0 {
		return harness.Sample{}, fmt.Errorf("the deliveries ran out: the rate says only that it was at least %.0f deliveries/s", s.Rate())
	}
	fo.fastest = max(fo.fastest, s.Rate())
	troubleAfter, err := count(ctx, fo.db, countTrouble)
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
// message.received event with its payload, the pending delivery and its job, due
// now. Ids are the prefix and i left-padded with 'a' to 26 characters.
func seed(ctx context.Context, db *store.DB, accountID string, first, last int, now time.Time) error {
	id := func(prefix string) string { return "'" + prefix + "_' || lpad(i::text, 26, 'a')" }
	events := `
		INSERT INTO events (id, account_id, type, thread_id, payload, created_at)
		SELECT ` + id("evt") + `, ?0, 'message.received', ` + id("thr") + `,
			json_build_object('event', 'message.received', 'event_id', ` + id("evt") + `, 'thread_id', ` + id("thr") + `,
				'message_id', ` + id("msg") + `, 'thread_type', 'individual', 'sender_number', '+1556' || lpad(i::text, 7, '0'),
				'sender_name', '', 'a1_account_id', ?0, 'a1_phone_number', '+15550000001', 'timestamp', ?1,
				'service', 'whatsapp', 'message_type', 'text', 'is_from_agent', false, 'agent_mentioned', true,
				'message_content', json_build_object('text', 'bench message'), 'content', 'bench message',
				'status', 'received', 'direction', 'inbound', 'recipient_number', '+15550000001')::text, ?2
		FROM generate_series(?3::int, ?4::int) AS i`
	deliveries := `
		INSERT INTO webhook_deliveries (id, account_id, event_id, event_type, thread_id, status, attempts,
			last_status_code, last_error, next_attempt_at, created_at, updated_at)
		SELECT ` + id("whk") + `, ?0, ` + id("evt") + `, 'message.received', ` + id("thr") + `, 'pending', 0, 0, '', ?2, ?2, ?2
		FROM generate_series(?3::int, ?4::int) AS i`
	// The account and endpoint as webhooks.EndpointKey names them, so
	// that the runner bounds the seeded deliveries as it bounds the
	// fan-out's.
	fairColumns, fairValues := ", account_id, endpoint_key", ", ?0, 'webhook:' || ?0"
	if fair, err := harness.JobsNameAccounts(ctx, db); err != nil {
		return err
	} else if !fair {
		fairColumns, fairValues = "", ""
	}
	jobs := `
		INSERT INTO jobs (kind, state, payload, attempt, max_attempts, unique_key, pace_key` + fairColumns + `, run_at, created_at)
		SELECT 'webhook.deliver', 'available', convert_to(json_build_object('delivery_id', ` + id("whk") + `)::text, 'UTF8'),
			0, 10000, 'whk:' || ` + id("whk") + `, 'whk:' || ?0 || ':' || ` + id("thr") + fairValues + `, ?5, ?5
		FROM generate_series(?3::int, ?4::int) AS i`
	args := []any{accountID, now.Format(time.RFC3339Nano), now, first, last, now.UnixMicro()}
	for _, q := range []string{events, deliveries, jobs} {
		if _, err := db.Bun().ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("seed deliveries: %s: %w", firstLine(q), err)
		}
	}
	return nil
}
