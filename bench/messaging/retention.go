package messaging

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Pruner measures what the history pruner costs the sends that run beside it
// (issue 39): closed-loop individual sends through a server whose pruner deletes
// all the time (history kept PrunedFor, a pass every PrunedEvery) against the same
// sends through a server whose pruner never runs in a slice, each on a deployment of
// its own. Both servers run jobs: every send is delivered through the sandbox and
// its events are delivered to a receiver, so each send leaves history behind, and
// the pruner deletes the history of the slices before. Each slice starts its side's
// server and stops it at the end, so the side that waits does not compete.
//
// After the rounds it measures the storage per message (Storage): Messages messages
// (BENCH_HISTORY_MESSAGES overrides), half received and half sent, with a webhook,
// through a server that keeps history 30 days and through one that keeps it
// StorageRetention; the bytes of every table but the job queue, after the
// deliveries end (and, with retention, after the pruner took what is older),
// divided by the messages.
type Pruner struct {
	Clients  int
	Users    int
	Numbers  int
	MaxConns int
	// PrunedFor and PrunedEvery are the retention and pass interval of the
	// pruning side.
	PrunedFor, PrunedEvery time.Duration
	Storage                Storage
}

// Storage is the storage follow-up of Pruner.
type Storage struct {
	Messages int
	// Users is the number of users (threads) the messages are spread over.
	Users int
	// Retention and Interval are the short retention's server flags.
	Retention, Interval time.Duration
	// Timeout bounds the wait for the deliveries and the pruner.
	Timeout time.Duration
}

// Baseline is the sends with the pruner off.
func (p Pruner) Baseline() harness.Baseline {
	return harness.Baseline{Name: "the same sends, pruner off", Unit: "sends", Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
		return p.side(ctx, env, "--history-prune-interval", "100000h")
	}}
}

// Setup prepares the pruning side and registers the storage follow-up.
func (p Pruner) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	env.AfterRounds(p.Storage.figures(env, p.Numbers, p.MaxConns))
	return p.side(ctx, env, "--history-retention", p.PrunedFor.String(), "--history-prune-interval", p.PrunedEvery.String())
}

// side provisions a deployment whose users wrote first, with its webhook set to a
// receiver, and returns the slice that serves it with flags.
func (p Pruner) side(ctx context.Context, env *harness.Env, flags ...string) (harness.Slice, error) {
	d, err := p.deployment(ctx, env, p.Numbers)
	if err != nil {
		return nil, err
	}
	convs := conversations(p.Users, p.Numbers)
	api, err := d.Serve(ctx, "--jobs=false", "--db-max-conns", "4")
	if err != nil {
		return nil, err
	}
	if err := writeFirst(ctx, api, convs); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	bodies, err := sendBodies(convs)
	if err != nil {
		return nil, err
	}
	flags = append(append([]string{"--db-max-conns", strconv.Itoa(p.MaxConns)}, harness.AllowLoopback...), flags...)
	return func(ctx context.Context, dur time.Duration) (harness.Sample, error) {
		sb, err := d.Serve(ctx, flags...)
		if err != nil {
			return harness.Sample{}, err
		}
		defer sb.Stop()
		load, err := harness.NewRotatingPostLoad(p.Clients, sb.URL+"/v1/messages/individual/"+sb.AccountID+"/send", sb.Header(), bodies)
		if err != nil {
			return harness.Sample{}, err
		}
		s, err := load.Run(ctx, dur)
		if err != nil {
			return harness.Sample{}, err
		}
		return s, sb.Stop()
	}, nil
}

// deployment is a new deployment with numbers agent numbers and its webhook set
// to a receiver that answers at once.
func (p Pruner) deployment(ctx context.Context, env *harness.Env, numbers int) (*harness.Deployment, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	if err := addNumbers(ctx, d, numbers); err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(false)
	if err != nil {
		return nil, err
	}
	return d, d.SetWebhook(ctx, d.AccountID, rc.URL)
}

// conversations are users users, user k writing to agent number k mod numbers.
func conversations(users, numbers int) []conversation {
	convs := make([]conversation, users)
	for k := range convs {
		convs[k] = conversation{user: userNumber(k), agent: agentNumber(k % numbers)}
	}
	return convs
}

// sendBodies are the send bodies of the agents' answers to convs, one each.
func sendBodies(convs []conversation) ([][]byte, error) {
	bodies := make([][]byte, len(convs))
	for i, c := range convs {
		b, err := json.Marshal(map[string]string{"from": c.agent, "to": c.user, "service": service, "content": body})
		if err != nil {
			return nil, err
		}
		bodies[i] = b
	}
	return bodies, nil
}

// figures is the storage follow-up: the bytes per message with history kept 30
// days, and with the short retention.
func (s Storage) figures(env *harness.Env, numbers, maxConns int) harness.FollowUp {
	return func(ctx context.Context, _ harness.Rounds) []harness.Figure {
		n := s.Messages
		if v, err := strconv.Atoi(os.Getenv("BENCH_HISTORY_MESSAGES")); err == nil && v > 0 {
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
			m, err := s.measure(ctx, env, n, numbers, maxConns, side.flags)
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
func (s Storage) measure(ctx context.Context, env *harness.Env, n, numbers, maxConns int, flags []string) (storageMeasure, error) {
	d, err := Pruner{}.deployment(ctx, env, numbers)
	if err != nil {
		return storageMeasure{}, err
	}
	db, err := d.SQL()
	if err != nil {
		return storageMeasure{}, err
	}
	sb, err := d.Serve(ctx, append(append([]string{"--db-max-conns", strconv.Itoa(maxConns)}, harness.AllowLoopback...), flags...)...)
	if err != nil {
		return storageMeasure{}, err
	}
	defer sb.Stop()
	convs := conversations(s.Users, numbers)
	if err := writeFirst(ctx, sb, convs); err != nil {
		return storageMeasure{}, err
	}
	// The rest alternate: a user writes, the agent answers, user after user.
	sends, err := sendBodies(convs)
	if err != nil {
		return storageMeasure{}, err
	}
	var posts []post
	for i := len(convs); i < n; i++ {
		c := convs[i%len(convs)]
		if i%2 == 0 {
			posts = append(posts, post{path: "/v1/sandbox/" + sb.AccountID + "/inbound", body: map[string]string{"service": service, "from": c.user, "to": c.agent, "message": body}})
		} else {
			posts = append(posts, post{path: "/v1/messages/individual/" + sb.AccountID + "/send", body: json.RawMessage(sends[i%len(convs)])})
		}
	}
	start := time.Now()
	if err := postAll(ctx, sb, posts); err != nil {
		return storageMeasure{}, err
	}
	env.Log.Info("history storage: messages posted", "messages", n, "took", time.Since(start).Round(time.Millisecond), "flags", flags)
	done := "SELECT (SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable', 'running')) + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')"
	if flags != nil {
		// Everything finished and older than the retention is gone but the
		// newest event of the log.
		done += " + (SELECT count(*) FROM webhook_deliveries) + greatest((SELECT count(*) FROM events) - 1, 0)"
	}
	deadline := time.Now().Add(s.Timeout)
	for {
		left, err := db.Int(ctx, done)
		if err != nil {
			return storageMeasure{}, err
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return storageMeasure{}, fmt.Errorf("after %s, %d jobs, deliveries or events are still waiting", s.Timeout, left)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return storageMeasure{}, err
		}
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
// compacted, with the largest tables.
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
		parts = append(parts, fmt.Sprintf("(jobs %.0f)", float64(sizes["jobs"])/float64(m.messages)))
		return float64(total) / float64(m.messages), strings.Join(parts, ", ")
	}
	disk, diskDetail := perMessage(m.onDisk)
	full, fullDetail := perMessage(m.full)
	return []harness.Figure{
		{Name: "bytes per message, " + side, Value: disk, Unit: "B",
			Detail: fmt.Sprintf("%d messages, half received and half sent, with a webhook; every table but the job queue, on disk after the deliveries ended and a VACUUM; B per message: %s", m.messages, diskDetail)},
		{Name: "bytes per message, " + side + ", compacted", Value: full, Unit: "B",
			Detail: "the same after VACUUM FULL: what the rows need; B per message: " + fullDetail},
	}
}

// post is one request of postAll: a path of the server and its JSON body.
type post struct {
	path string
	body any
}

// postAll posts each request to sb from 16 clients at once, untimed, and
// returns the first failure.
func postAll(ctx context.Context, sb *harness.Switchboard, posts []post) error {
	return harness.ForEach(ctx, 16, posts, func(ctx context.Context, p post) error {
		if err := harness.PostJSON(ctx, sb.URL+p.path, sb.Header(), p.body, nil); err != nil {
			return fmt.Errorf("POST %s: %w", p.path, err)
		}
		return nil
	})
}
