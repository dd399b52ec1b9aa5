package messaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Send measures individual sends through the real server: POST
// /v1/messages/individual/{accountId}/send from Clients concurrent HTTP clients in a
// closed loop. The server serves the API only (--jobs=false), so delivering the
// messages does not compete with storing them; they stay queued, as they would on an
// API replica. Sends go round-robin to Users users, user k talking to agent number
// k mod Numbers; each user wrote once before the rounds (untimed), so every send
// finds its thread, and concurrent sends rarely touch the same one.
//
// After the rounds, Send measures what qualifies the ratio (see the follow-ups in
// Setup): the p99 latency at an open-loop rate of OpenLoopShare of the closed-loop
// median, against a target of its own; WAL syncs and transactions per send from
// Postgres's statistics, and CPU time per send; SQL statements per send, counted on
// the wire; and, for information, one slice's rate with delivery jobs running.
type Send struct {
	// Clients is the number of concurrent clients of the closed loop.
	Clients int
	// Users is the number of users the sends go to.
	Users int
	// Numbers is the number of the account's agent numbers the users talk to. With
	// jobs on, deliveries are paced at 80/s per number, so enough numbers let the
	// runner deliver as fast as it can.
	Numbers int
	// MaxConns is the server's pool (--db-max-conns). It stays open while pgbench's 64
	// clients run, so it is bounded by Postgres's 100 connections.
	MaxConns int
	// OpenLoopShare is the open-loop rate as a share of the closed-loop median rate.
	OpenLoopShare float64
	// OpenLoopP99 is the target p99 latency at that rate.
	OpenLoopP99 time.Duration
	// OpenLoopWorkers bounds the open loop's requests in flight.
	OpenLoopWorkers int
	// OpenLoopBaseline, when it has a Script, runs at the same rate after each
	// open-loop slice, for its latency beside ours (see harness.PGBench.OpenLoop).
	OpenLoopBaseline harness.PGBench
	// StatsQuiet is how long the database is left alone before and after the slice
	// whose statistics are read. Postgres backends publish their counters at most
	// once a second while busy, and within 10 s once idle, so a shorter quiet period
	// misses some of them.
	StatsQuiet time.Duration
}

// Setup provisions the deployment, starts the API-only server, has the users write
// first and returns the closed-loop send slice.
func (s Send) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	if err := addNumbers(ctx, d, s.Numbers); err != nil {
		return nil, err
	}
	api, err := d.Serve(ctx, s.flags(false)...)
	if err != nil {
		return nil, err
	}
	convs := make([]conversation, s.Users)
	for k := range convs {
		convs[k] = conversation{user: userNumber(k), agent: agentNumber(k % s.Numbers)}
	}
	if err := writeFirst(ctx, api, convs); err != nil {
		return nil, err
	}
	database, err := db.String(ctx, "SELECT current_database()")
	if err != nil {
		return nil, err
	}
	snd := &sender{Send: s, d: d, db: db, database: database, api: api}
	for _, c := range convs {
		b, err := json.Marshal(map[string]string{"from": c.agent, "to": c.user, "service": service, "content": body})
		if err != nil {
			return nil, err
		}
		snd.bodies = append(snd.bodies, b)
	}
	if s.OpenLoopBaseline.Script != "" {
		if snd.baselineOpen, err = s.OpenLoopBaseline.OpenLoop(ctx, env); err != nil {
			return nil, err
		}
	}
	env.AfterRounds(snd.openLoop)
	env.AfterRounds(snd.walAndTransactions)
	env.AfterRounds(snd.statements)
	env.AfterRounds(snd.withJobs)
	if snd.load, err = snd.newLoad(api, s.Clients); err != nil {
		return nil, err
	}
	return snd.load.Run, nil
}

// flags are the serve flags of the scenario's servers, with or without jobs.
func (s Send) flags(jobs bool) []string {
	f := []string{"--db-max-conns", strconv.Itoa(s.MaxConns)}
	if !jobs {
		f = append(f, "--jobs=false")
	}
	return f
}

type sender struct {
	Send
	d  *harness.Deployment
	db *harness.SQL
	// database is the name of the deployment's database.
	database string
	// api is the API-only server of the rounds, load their closed loop.
	api  *harness.Switchboard
	load *harness.HTTPLoad
	// bodies holds one send body per user.
	bodies [][]byte
	// baselineOpen runs OpenLoopBaseline; nil without one.
	baselineOpen harness.OpenSlice
}

// newLoad returns a load of workers that send to each user in turn through sb.
func (s *sender) newLoad(sb *harness.Switchboard, workers int) (*harness.HTTPLoad, error) {
	return harness.NewRotatingPostLoad(workers, sb.URL+"/v1/messages/individual/"+sb.AccountID+"/send", sb.Header(), s.bodies)
}

// openLoop measures the latency of sends offered at a fixed rate, OpenLoopShare of
// the closed-loop median, over as many slices as the run has rounds, on the same
// server: a server is run well below its capacity, and what its users see there is
// the latency, not the rate. With an OpenLoopBaseline, each slice is followed by one
// of the baseline at the same rate, whose latency is reported beside ours: a stall of
// the machine's disk flushes, which no server avoids, shows on both.
func (s *sender) openLoop(ctx context.Context, r harness.Rounds) []harness.Figure {
	rate := s.OpenLoopShare * r.Result.Measured.Rate.Median
	name := fmt.Sprintf("open-loop p99 at %.0f sends/s", rate)
	load, err := s.newLoad(s.api, s.OpenLoopWorkers)
	if err != nil {
		return []harness.Figure{harness.FigureError(name, err)}
	}
	if _, err := load.RunOpen(ctx, r.Config.Warmup, rate); err != nil {
		return []harness.Figure{harness.FigureError(name, err)}
	}
	// Only a run against pgbench has room for its clients beside ours: comparing two
	// builds (-against) keeps a second server's pool open.
	baseline := s.baselineOpen
	if r.Result.Baseline != s.OpenLoopBaseline.Name {
		baseline = nil
	}
	var ours, base openLatencies
	for range r.Config.Rounds {
		m, err := load.RunOpen(ctx, r.Config.Slice, rate)
		if err != nil {
			return []harness.Figure{harness.FigureError(name, err)}
		}
		ours.add(m)
		if baseline == nil {
			continue
		}
		b, err := baseline(ctx, r.Config.Slice, rate)
		if err != nil {
			return []harness.Figure{harness.FigureError(name, err)}
		}
		base.add(b)
	}
	target := millis(s.OpenLoopP99)
	figures := []harness.Figure{ours.figure(name, "sends", &target,
		fmt.Sprintf("%.0f%% of the closed-loop median", 100*s.OpenLoopShare))}
	if baseline != nil {
		baseName := fmt.Sprintf("%s open-loop p99 at %.0f tx/s", s.OpenLoopBaseline.Name, rate)
		figures = append(figures, base.figure(baseName, "transactions", nil,
			"after each of those slices, pgbench -R at the same rate, latency from each transaction's scheduled start"))
	}
	return figures
}

// openLatencies gathers the open-loop slices of one side.
type openLatencies struct {
	all            []time.Duration
	p99s, achieved []float64
	failed         int
	first          string
}

func (o *openLatencies) add(m harness.Sample) {
	o.failed += m.Failed
	if o.first == "" {
		o.first = m.FirstFailure
	}
	lat := slices.Sorted(slices.Values(m.Latencies))
	o.all = append(o.all, lat...)
	if len(lat) > 0 {
		o.p99s = append(o.p99s, millis(harness.Percentile(lat, 99)))
	}
	o.achieved = append(o.achieved, m.Rate())
}

// figure is the p99 of every latency gathered, with the spread of the slices.
func (o *openLatencies) figure(name, unit string, limit *float64, how string) harness.Figure {
	switch {
	case o.failed > 0:
		return harness.FigureError(name, fmt.Errorf("%d of %d %s failed (first: %s)", o.failed, o.failed+len(o.all), unit, o.first))
	case len(o.all) == 0:
		return harness.FigureError(name, fmt.Errorf("no %s", unit))
	}
	slices.Sort(o.all)
	spread, got := harness.Summarize(o.p99s), harness.Summarize(o.achieved)
	return harness.Figure{
		Name: name, Value: millis(harness.Percentile(o.all, 99)), Unit: "ms", Max: limit,
		Detail: fmt.Sprintf("%s; %d %s in %d slices (achieved %.0f/s); p50 %.2f ms, max %.2f ms; slice p99 %.2f-%.2f ms",
			how, len(o.all), unit, len(o.p99s), got.Median, millis(harness.Percentile(o.all, 50)), millis(o.all[len(o.all)-1]), spread.Min, spread.Max),
	}
}

// pgStats are the cumulative counters the WAL and transaction figures are read from.
type pgStats struct {
	WALSyncs  int64
	WALWrites int64
	WALBytes  int64
	// WALImages are the full-page images written to the WAL: a page's first change
	// after a checkpoint logs the whole page.
	WALImages int64
	// Xacts are the transactions committed or rolled back, by database.
	Xacts map[string]int64
}

func readPGStats(ctx context.Context, db *harness.SQL) (pgStats, error) {
	st := pgStats{Xacts: map[string]int64{}}
	wal, err := db.Rows(ctx, "SELECT wal_sync, wal_write, wal_bytes, wal_fpi FROM pg_stat_wal")
	if err == nil && (len(wal) != 1 || len(wal[0]) != 4) {
		err = fmt.Errorf("%d rows", len(wal))
	}
	if err == nil {
		for i, p := range []*int64{&st.WALSyncs, &st.WALWrites, &st.WALBytes, &st.WALImages} {
			if *p, err = strconv.ParseInt(wal[0][i], 10, 64); err != nil {
				break
			}
		}
	}
	if err != nil {
		return pgStats{}, fmt.Errorf("read pg_stat_wal: %w", err)
	}
	rows, err := db.Rows(ctx, `SELECT datname, xact_commit + xact_rollback FROM pg_stat_database WHERE datname IS NOT NULL`)
	if err != nil {
		return pgStats{}, fmt.Errorf("read pg_stat_database: %w", err)
	}
	for _, r := range rows {
		n, err := strconv.ParseInt(r[len(r)-1], 10, 64)
		if len(r) != 2 || err != nil {
			return pgStats{}, fmt.Errorf("read pg_stat_database: row %q", r)
		}
		st.Xacts[r[0]] = n
	}
	return st, nil
}

// xactsSince returns the transactions database ran since before, and those of every
// other database that exists at both readings.
func (st pgStats) xactsSince(before pgStats, database string) (own, others int64) {
	for name, n := range st.Xacts {
		n0, ok := before.Xacts[name]
		switch {
		case !ok:
		case name == database:
			own = n - n0
		default:
			others += n - n0
		}
	}
	return own, others
}

// walAndTransactions runs one closed-loop slice, then one baseline slice, between
// readings of Postgres's counters, each taken after StatsQuiet of quiet so that every
// backend has published its share. From them: WAL syncs per 1000 sends
// (pg_stat_wal.wal_sync: the WAL flushes of backends and the WAL writer, one per
// group of commits flushed together), beside the baseline's per 1000 transactions;
// transactions per send (pg_stat_database of the deployment's database, read-only
// ones included); and the CPU time per send of the server process and of every
// Postgres process, read from /proc around the send slice, beside the whole
// machine's per baseline transaction (harness.CPUFigure).
func (s *sender) walAndTransactions(ctx context.Context, r harness.Rounds) []harness.Figure {
	const walName, bytesName, txName, cpuName = "WAL syncs per 1000 sends", "WAL bytes per send", "transactions per send", "CPU per send"
	fail := func(err error) []harness.Figure {
		return []harness.Figure{harness.FigureError(walName, err), harness.FigureError(bytesName, err), harness.FigureError(txName, err), harness.FigureError(cpuName, err)}
	}
	quietStats := func() (pgStats, error) {
		if err := sleep(ctx, s.StatsQuiet); err != nil {
			return pgStats{}, err
		}
		return readPGStats(ctx, s.db)
	}
	st0, err := quietStats()
	if err != nil {
		return fail(err)
	}
	m, cpu, err := harness.Metered(s.api.PID(), s.load.Run)(ctx, r.Config.Slice)
	if err != nil {
		return fail(err)
	}
	if m.Failed > 0 || m.Ops == 0 {
		return fail(fmt.Errorf("%d of %d sends failed (first: %s)", m.Failed, m.Failed+m.Ops, m.FirstFailure))
	}
	st1, err := quietStats()
	if err != nil {
		return fail(err)
	}
	b, baseCPU, err := harness.Metered(0, r.Baseline)(ctx, r.Config.Slice)
	if err != nil {
		return fail(err)
	}
	st2, err := quietStats()
	if err != nil {
		return fail(err)
	}
	sends := float64(m.Ops)
	perTx := func(n int64) float64 { return float64(n) / float64(max(1, b.Ops)) }
	xacts, others := st1.xactsSince(st0, s.database)
	return []harness.Figure{
		{
			Name: walName, Value: 1000 * float64(st1.WALSyncs-st0.WALSyncs) / sends,
			Detail: fmt.Sprintf("pg_stat_wal.wal_sync over %d sends in one closed-loop slice (%.0f/s); %s: %.0f per 1000 tx in the slice after (%.0f tx/s). The counter is the whole server's; other databases ran %d transactions during the sends",
				m.Ops, m.Rate(), r.Result.Baseline, 1000*perTx(st2.WALSyncs-st1.WALSyncs), b.Rate(),
				others),
		},
		{
			Name: bytesName, Value: float64(st1.WALBytes-st0.WALBytes) / sends, Unit: "B",
			Detail: fmt.Sprintf("pg_stat_wal.wal_bytes over the same sends, %.2f full-page images per send (wal_fpi; the first change of a page after a checkpoint logs all of it); %s: %.0f B and %.2f images per tx",
				float64(st1.WALImages-st0.WALImages)/sends, r.Result.Baseline,
				perTx(st2.WALBytes-st1.WALBytes), perTx(st2.WALImages-st1.WALImages)),
		},
		{
			Name: txName, Value: float64(xacts) / sends,
			Detail: "pg_stat_database.xact_commit + xact_rollback of the deployment's database over the same sends; read-only transactions count too",
		},
		harness.CPUFigure(cpuName, "send", r, cpu, m.Ops, baseCPU, b.Ops),
	}
}

// statements counts the SQL statements of each send on the wire: a second API-only
// server on the same database connects through a harness.PGProxy, and one
// closed-loop slice runs against it after a warm-up. The proxy's extra hop slows the
// sends, so the slice's rate is not reported; the statements per send do not depend
// on it, except that the NOTIFYs that wake job runners are coalesced (at most one
// per 2 ms per process), so their share per send falls as the rate rises.
func (s *sender) statements(ctx context.Context, r harness.Rounds) []harness.Figure {
	const name = "SQL statements per send"
	fail := func(err error) []harness.Figure { return []harness.Figure{harness.FigureError(name, err)} }
	proxy, err := harness.StartPGProxy(s.d.DatabaseURL)
	if err != nil {
		return fail(err)
	}
	defer proxy.Close()
	sb, err := s.d.Serve(ctx, append(s.flags(false), "--database-url", proxy.URL)...)
	if err != nil {
		return fail(err)
	}
	defer sb.Stop()
	load, err := s.newLoad(sb, s.Clients)
	if err != nil {
		return fail(err)
	}
	if _, err := load.Run(ctx, r.Config.Warmup); err != nil {
		return fail(err)
	}
	before := proxy.Counts()
	m, err := load.Run(ctx, r.Config.Slice)
	if err != nil {
		return fail(err)
	}
	c := proxy.Counts().Sub(before)
	switch {
	case m.Failed > 0 || m.Ops == 0:
		return fail(fmt.Errorf("%d of %d sends failed (first: %s)", m.Failed, m.Failed+m.Ops, m.FirstFailure))
	case c.Unparsed > 0:
		return fail(fmt.Errorf("the proxy could not follow %d connections", c.Unparsed))
	}
	sends := float64(m.Ops)
	var parts []string
	for _, kw := range slices.Sorted(maps.Keys(c.Statements)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", kw, float64(c.Statements[kw])/sends))
	}
	return []harness.Figure{{
		Name: name, Value: float64(c.Total()) / sends,
		Detail: fmt.Sprintf("counted on the wire over %d sends: %s; %.2f transactions per send (BEGIN…COMMIT blocks and statements outside one)",
			m.Ops, strings.Join(parts, ", "), float64(c.Transactions)/sends),
	}}
}

// withJobs measures one round, for information, with delivery running: the
// API-only server is stopped, the queue left by the rounds emptied (untimed; its
// messages stay queued, unreachable, in a database dropped after the scenario), and
// a server with jobs on (default workers, same pool size) takes one warm-up and one
// closed-loop slice, followed by one baseline slice.
func (s *sender) withJobs(ctx context.Context, r harness.Rounds) []harness.Figure {
	const name = "send rate with jobs on"
	fail := func(err error) []harness.Figure { return []harness.Figure{harness.FigureError(name, err)} }
	if err := s.api.Stop(); err != nil {
		return fail(err)
	}
	if err := s.db.Exec(ctx, "DELETE FROM jobs WHERE state IN ('available', 'retryable'); VACUUM (ANALYZE) jobs"); err != nil {
		return fail(err)
	}
	sb, err := s.d.Serve(ctx, s.flags(true)...)
	if err != nil {
		return fail(err)
	}
	load, err := s.newLoad(sb, s.Clients)
	if err != nil {
		return fail(err)
	}
	if _, err := load.Run(ctx, r.Config.Warmup); err != nil {
		return fail(err)
	}
	const delivered = "SELECT count(*) FROM messages WHERE status = 'delivered'"
	before, err := s.db.Int(ctx, delivered)
	if err != nil {
		return fail(err)
	}
	m, err := load.Run(ctx, r.Config.Slice)
	if err != nil {
		return fail(err)
	}
	after, err := s.db.Int(ctx, delivered)
	if err != nil {
		return fail(err)
	}
	if err := sb.Stop(); err != nil {
		return fail(err)
	}
	if m.Failed > 0 || m.Ops == 0 {
		return fail(fmt.Errorf("%d of %d sends failed (first: %s)", m.Failed, m.Failed+m.Ops, m.FirstFailure))
	}
	b, err := r.Baseline(ctx, r.Config.Slice)
	if err != nil {
		return fail(err)
	}
	return []harness.Figure{{
		Name: name, Value: m.Rate(), Unit: "sends/s",
		Detail: fmt.Sprintf("one closed-loop slice on a server delivering as it serves (default job workers, paced at 80/s per agent number): %d messages delivered during it (%.0f/s); ratio %.2f to %s's %.0f %s in the slice that followed",
			after-before, float64(after-before)/m.Elapsed.Seconds(), m.Rate()/b.Rate(), r.Result.Baseline, b.Rate(), r.Result.BaselineUnit+"/s"),
	}}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Replicated is the closed-loop send through n API-only servers at once on one
// database, sharing Clients and MaxConns between them (each gets its part, rounded
// up), without the follow-ups: the rate of a cluster of n replicas of the same size
// as one. The clients are split between the servers, as a load balancer would split
// them, each sending to every user in turn.
func (s Send) Replicated(n int) func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	return func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
		d, err := env.NewDeployment(ctx)
		if err != nil {
			return nil, err
		}
		if err := addNumbers(ctx, d, s.Numbers); err != nil {
			return nil, err
		}
		part := func(total int) int { return (total + n - 1) / n }
		flags := []string{"--db-max-conns", strconv.Itoa(part(s.MaxConns)), "--jobs=false"}
		servers := make([]*harness.Switchboard, n)
		for i := range servers {
			if servers[i], err = d.Serve(ctx, flags...); err != nil {
				return nil, err
			}
		}
		convs := make([]conversation, s.Users)
		for k := range convs {
			convs[k] = conversation{user: userNumber(k), agent: agentNumber(k % s.Numbers)}
		}
		if err := writeFirst(ctx, servers[0], convs); err != nil {
			return nil, err
		}
		snd := &sender{Send: s, d: d}
		for _, c := range convs {
			b, err := json.Marshal(map[string]string{"from": c.agent, "to": c.user, "service": service, "content": body})
			if err != nil {
				return nil, err
			}
			snd.bodies = append(snd.bodies, b)
		}
		loads := make([]*harness.HTTPLoad, n)
		for i, sb := range servers {
			clients := s.Clients / n
			if i < s.Clients%n {
				clients++
			}
			if loads[i], err = snd.newLoad(sb, clients); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context, dur time.Duration) (harness.Sample, error) {
			samples := make([]harness.Sample, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, l := range loads {
				wg.Go(func() { samples[i], errs[i] = l.Run(ctx, dur) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return harness.Sample{}, err
			}
			return harness.Concurrent(samples), nil
		}, nil
	}
}
