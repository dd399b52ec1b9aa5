package messaging

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Storage measures what messages cost on disk (issue 39).
//
// Its rounds are steady traffic through one deployment: Rate messages a second,
// open loop, half received through the sandbox inbound route and half sent, over
// Users threads, every event delivered to a receiver; the result is each POST's
// latency. Every message moves its thread's activity, so a thread whose updates
// cannot stay on their page (HOT) grows by a row version and index entries per
// message until a vacuum: after the rounds it reports what threads (table and
// indexes) grew per message from the warm-up to the last round, and, once the
// deliveries ended, its size on disk against the same rows compacted (VACUUM
// FULL).
//
// Then the bytes per message: Messages messages (BENCH_STORAGE_MESSAGES
// overrides), half received and half sent, over MessageUsers threads, with the
// webhook, through a server that keeps history 30 days and through one that keeps
// it Retention (a pruner pass every Interval); once the deliveries ended (and,
// with retention, the pruner took what is older), the bytes of every table but the
// job queue, on disk after a VACUUM and compacted, divided by the messages stored,
// with the largest tables; the job queue's apart.
type Storage struct {
	Users    int
	Numbers  int
	Clients  int
	MaxConns int
	// Rate is the steady traffic of the rounds, messages a second.
	Rate float64
	// ThreadsGrowth is the most threads (table and indexes) may grow per
	// message of the rounds, in bytes.
	ThreadsGrowth float64

	Messages     int
	MessageUsers int
	// Retention and Interval are the short retention's server flags.
	Retention, Interval time.Duration
	// Timeout bounds each wait for the deliveries and the pruner.
	Timeout time.Duration
}

// Setup provisions the deployment of the steady traffic, registers the
// follow-ups and returns the slice of traffic.
func (s Storage) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := webhookDeployment(ctx, env, s.Numbers)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	sb, err := d.Serve(ctx, append([]string{"--db-max-conns", strconv.Itoa(s.MaxConns)}, harness.AllowLoopback...)...)
	if err != nil {
		return nil, err
	}
	convs := conversations(s.Users, s.Numbers)
	if err := writeFirst(ctx, sb, convs); err != nil {
		return nil, err
	}
	posts, err := traffic(sb, convs)
	if err != nil {
		return nil, err
	}
	reqs := make([]*http.Request, len(posts))
	for i, p := range posts {
		b, err := json.Marshal(p.body)
		if err != nil {
			return nil, err
		}
		if reqs[i], err = harness.Post(sb.URL+p.path, sb.Header(), b)(ctx); err != nil {
			return nil, err
		}
	}
	load, err := harness.NewRotatingHTTPLoad(s.Clients, reqs)
	if err != nil {
		return nil, err
	}
	// The size of threads after each slice, and the messages of the slices
	// after the first.
	var sizes []int
	messages := 0
	env.AfterRounds(func(ctx context.Context, _ harness.Rounds) []harness.Figure {
		out := []harness.Figure{s.growth(sizes, messages)}
		f, err := s.threads(ctx, db, sb)
		if err != nil {
			return append(out, harness.FigureError("threads after steady traffic", err))
		}
		return append(out, f)
	})
	env.AfterRounds(s.perMessage(env))
	return func(ctx context.Context, d time.Duration) (harness.Sample, error) {
		sample, err := load.RunOpen(ctx, d, s.Rate)
		if err != nil {
			return sample, err
		}
		size, err := db.Int(ctx, "SELECT pg_total_relation_size('threads')")
		if err != nil {
			return sample, err
		}
		if len(sizes) > 0 {
			messages += sample.Ops
		}
		sizes = append(sizes, size)
		return sample, nil
	}, nil
}

// growth is the figure of what threads grew per message between the end of
// the first slice (the warm-up) and the end of the last.
func (s Storage) growth(sizes []int, messages int) harness.Figure {
	const name = "threads growth per message of steady traffic"
	if len(sizes) < 2 || messages == 0 {
		return harness.FigureError(name, fmt.Errorf("%d slices measured, %d messages after the first", len(sizes), messages))
	}
	grown := sizes[len(sizes)-1] - sizes[0]
	return harness.Figure{Name: name, Value: float64(grown) / float64(messages), Unit: "B", Max: &s.ThreadsGrowth,
		Detail: fmt.Sprintf("table and indexes, %d kB after the warm-up, %d kB after %d more messages (each moves its thread's activity)", sizes[0]/1024, sizes[len(sizes)-1]/1024, messages)}
}

// traffic is two posts to sb for each of convs: the user writes through the
// sandbox, the agent answers.
func traffic(sb *harness.Switchboard, convs []conversation) ([]post, error) {
	sends, err := sendBodies(convs)
	if err != nil {
		return nil, err
	}
	posts := make([]post, 0, 2*len(convs))
	for k, c := range convs {
		posts = append(posts, inboundPost(sb, c), sendPost(sb, sends[k]))
	}
	return posts, nil
}

// inboundPost is a message of c's user to c's agent number, through the
// sandbox.
func inboundPost(sb *harness.Switchboard, c conversation) post {
	return post{path: "/v1/sandbox/" + sb.AccountID + "/inbound", body: map[string]string{"service": service, "from": c.user, "to": c.agent, "message": body}}
}

// sendPost is an individual send of body (sendBodies).
func sendPost(sb *harness.Switchboard, body []byte) post {
	return post{path: "/v1/messages/individual/" + sb.AccountID + "/send", body: json.RawMessage(body)}
}

// threads waits for the deliveries of the rounds to end, stops sb and reports
// threads on disk against threads compacted.
func (s Storage) threads(ctx context.Context, db *harness.SQL, sb *harness.Switchboard) (harness.Figure, error) {
	if err := waitFor(ctx, db, deliveriesLeft, s.Timeout); err != nil {
		return harness.Figure{}, err
	}
	if err := sb.Stop(); err != nil {
		return harness.Figure{}, err
	}
	row, err := db.Rows(ctx, `SELECT pg_relation_size('threads'), pg_indexes_size('threads'), (SELECT count(*) FROM threads),
		n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'threads'`)
	if err != nil {
		return harness.Figure{}, err
	}
	if len(row) != 1 || len(row[0]) != 5 {
		return harness.Figure{}, fmt.Errorf("threads size: rows %v", row)
	}
	v := make([]int64, 5)
	for i, c := range row[0] {
		if v[i], err = strconv.ParseInt(c, 10, 64); err != nil {
			return harness.Figure{}, fmt.Errorf("threads size: %q: %w", c, err)
		}
	}
	table, indexes, live, updates, hot := v[0], v[1], v[2], v[3], v[4]
	if err := db.Exec(ctx, "VACUUM FULL threads"); err != nil {
		return harness.Figure{}, err
	}
	compacted, err := db.Int(ctx, "SELECT pg_total_relation_size('threads')")
	if err != nil {
		return harness.Figure{}, err
	}
	ratio := float64(table+indexes) / float64(compacted)
	return harness.Figure{Name: "threads after steady traffic, on disk / compacted", Value: ratio, Unit: "x",
		Detail: fmt.Sprintf("%d threads after %d updates (%.0f%% in place, HOT; the statistics lag by a second or so): table %d kB and indexes %d kB on disk, %d B per thread; %d kB after VACUUM FULL",
			live, updates, 100*float64(hot)/float64(max(updates, 1)), table/1024, indexes/1024, (table+indexes)/max(live, 1), compacted/1024)}, nil
}

// deliveriesLeft counts the jobs not yet done and the webhook deliveries
// still pending.
const deliveriesLeft = "SELECT (SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable', 'running')) + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')"

// waitFor polls count on db every second until it is 0, for at most timeout.
func waitFor(ctx context.Context, db *harness.SQL, count string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left, err := db.Int(ctx, count)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d jobs, deliveries or events are still waiting", timeout, left)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// perMessage is the follow-up of the bytes per message with history kept 30
// days, and with the short retention.
func (s Storage) perMessage(env *harness.Env) harness.FollowUp {
	return func(ctx context.Context, _ harness.Rounds) []harness.Figure {
		n := s.Messages
		if v, err := strconv.Atoi(os.Getenv("BENCH_STORAGE_MESSAGES")); err == nil && v > 0 {
			n = v
		}
		var out []harness.Figure
		for _, side := range []struct {
			name  string
			flags []string
		}{
			{"history kept 30 days", nil},
			{"history kept " + s.Retention.String(), []string{"--history-retention", s.Retention.String(), "--history-prune-interval", s.Interval.String()}},
		} {
			m, err := s.measure(ctx, env, n, side.flags)
			if err != nil {
				out = append(out, harness.FigureError("bytes per message, "+side.name, err))
				continue
			}
			out = append(out, m.figures(side.name)...)
		}
		return out
	}
}

// storageMeasure is what one storage run found: the messages stored and each
// table's bytes on disk, then after VACUUM FULL.
type storageMeasure struct {
	messages     int
	onDisk, full map[string]int64
}

// measure sends n messages through a fresh deployment served with flags, waits
// for the deliveries to end and the pruner (if any) to take what is older than
// the retention, and reads the tables' sizes.
func (s Storage) measure(ctx context.Context, env *harness.Env, n int, flags []string) (storageMeasure, error) {
	d, err := webhookDeployment(ctx, env, s.Numbers)
	if err != nil {
		return storageMeasure{}, err
	}
	db, err := d.SQL()
	if err != nil {
		return storageMeasure{}, err
	}
	sb, err := d.Serve(ctx, append(append([]string{"--db-max-conns", strconv.Itoa(s.MaxConns)}, harness.AllowLoopback...), flags...)...)
	if err != nil {
		return storageMeasure{}, err
	}
	defer sb.Stop()
	convs := conversations(s.MessageUsers, s.Numbers)
	if err := writeFirst(ctx, sb, convs); err != nil {
		return storageMeasure{}, err
	}
	// n/2 sends, user after user, and as many received messages: each user's
	// first (above), then one before each send from the second round on.
	if n < 2*len(convs) {
		return storageMeasure{}, fmt.Errorf("%d messages over %d users: want at least 2 per user", n, len(convs))
	}
	sends, err := sendBodies(convs)
	if err != nil {
		return storageMeasure{}, err
	}
	var posts []post
	for i := range n / 2 {
		k := i % len(convs)
		if i >= len(convs) {
			posts = append(posts, inboundPost(sb, convs[k]))
		}
		posts = append(posts, sendPost(sb, sends[k]))
	}
	start := time.Now()
	if err := postAll(ctx, sb, posts); err != nil {
		return storageMeasure{}, err
	}
	env.Log.Info("storage: messages posted", "messages", n, "took", time.Since(start).Round(time.Millisecond), "flags", flags)
	done := deliveriesLeft
	if flags != nil {
		// Everything finished and older than the retention is gone but the
		// newest event of the log.
		done += " + (SELECT count(*) FROM webhook_deliveries) + greatest((SELECT count(*) FROM events) - 1, 0)"
	}
	if err := waitFor(ctx, db, done, s.Timeout); err != nil {
		return storageMeasure{}, err
	}
	if err := sb.Stop(); err != nil {
		return storageMeasure{}, err
	}
	m := storageMeasure{}
	if m.messages, err = db.Int(ctx, "SELECT count(*) FROM messages"); err != nil {
		return storageMeasure{}, err
	}
	if err := db.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return storageMeasure{}, err
	}
	if m.onDisk, err = tableSizes(ctx, db); err != nil {
		return storageMeasure{}, err
	}
	if err := db.Exec(ctx, "VACUUM FULL"); err != nil {
		return storageMeasure{}, err
	}
	if m.full, err = tableSizes(ctx, db); err != nil {
		return storageMeasure{}, err
	}
	return m, nil
}

// tableSizes reads each table's size with its indexes and TOAST.
func tableSizes(ctx context.Context, db *harness.SQL) (map[string]int64, error) {
	rows, err := db.Rows(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		if len(r) != 2 {
			return nil, fmt.Errorf("table sizes: row %v", r)
		}
		n, err := strconv.ParseInt(r[1], 10, 64)
		if err != nil {
			return nil, err
		}
		out[r[0]] = n
	}
	return out, nil
}

// figures reports the bytes per message besides the job queue, on disk and
// compacted, with the largest tables, and the job queue's.
func (m storageMeasure) figures(side string) []harness.Figure {
	perMessage := func(sizes map[string]int64) (float64, string) {
		var total int64
		var names []string
		for name, n := range sizes {
			if name != "jobs" {
				total += n
				names = append(names, name)
			}
		}
		slices.SortFunc(names, func(a, b string) int { return int(sizes[b] - sizes[a]) })
		var parts []string
		for _, name := range names[:min(6, len(names))] {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, float64(sizes[name])/float64(m.messages)))
		}
		return float64(total) / float64(m.messages), strings.Join(parts, ", ")
	}
	disk, diskDetail := perMessage(m.onDisk)
	full, fullDetail := perMessage(m.full)
	return []harness.Figure{
		{Name: "bytes per message, " + side, Value: disk, Unit: "B",
			Detail: fmt.Sprintf("%d messages, half received and half sent, with a webhook; every table but the job queue, on disk after the deliveries ended and a VACUUM; B per message: %s", m.messages, diskDetail)},
		{Name: "bytes per message, " + side + ", compacted", Value: full, Unit: "B",
			Detail: "the same after VACUUM FULL: what the rows need; B per message: " + fullDetail},
		{Name: "job queue bytes per message, " + side, Value: float64(m.onDisk["jobs"]) / float64(m.messages), Unit: "B",
			Detail: fmt.Sprintf("the jobs table (completed jobs stay 24 h), on disk; %.0f B compacted", float64(m.full["jobs"])/float64(m.messages))},
	}
}
