package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Noisy measures a healthy account's latencies beside a noisy neighbour (issue 22):
// one server with the default runner serves two accounts of one deployment.
//
// The noisy account A has CronJobs+1 receivers on 127.0.0.1 that accept each
// request and never answer: its webhook (the server gives up on an attempt after
// 15 s) and the endpoints of CronJobs cron jobs (given up after their default 30 s).
// Before each round the bench tops A's webhook deliveries not yet attempted up to
// Queued with sandbox inbound messages, each from a new user, so in a thread of its
// own that no per-thread ordering holds back. The cron jobs are created through the
// API with the finest schedule it has (every minute); the bench makes them due again
// every CronEvery (their next run set to now in the database, as the cron scenarios
// write their jobs), so each calls its endpoint about once a second.
//
// The healthy account B has a receiver that answers 204 at once. Each round, for
// Window, B posts a sandbox inbound message and an individual send every Interval
// (from Users users in turn). Two latencies are measured: an inbound message's from
// its acceptance (the inbound endpoint's answer) until B's receiver has read its
// webhook delivery (its message.received payload), and a send's from its request
// until the message has left status queued (its row read every Poll). An operation not
// done Timeout after its clock started is late: it counts at Timeout in the
// percentiles, which are then lower bounds; the figures say how many were late, how
// many of those were done by the end of the rounds and how long the oldest still
// waiting had waited. A request that fails, or a send that fails, is a failure.
//
// Each slice measures for Window whatever d it is given (as recovery's ignores
// it), except the first, the harness's warm-up, which measures for d only.
//
// The scenario runs on Postgres only: making the cron jobs due every second, and
// reading whether B's sends have left queued, are SQL (harness.SQL), which the bench
// runs through psql, never on a SQLite file.
type Noisy struct {
	// Queued is how many of A's webhook deliveries not yet attempted each round
	// starts with.
	Queued int
	// CronJobs is how many cron jobs of A call hanging endpoints.
	CronJobs int
	// CronEvery is how often the bench makes A's cron jobs due.
	CronEvery time.Duration
	// Interval is the time between two of B's inbound messages, and between two of
	// its sends.
	Interval time.Duration
	// Users is how many users B's messages come from and its sends go to.
	Users int
	// Window is how long each round sends B's traffic.
	Window time.Duration
	// Timeout is how long each of B's operations is waited for.
	Timeout time.Duration
	// Poll is how often the statuses of B's sends are read.
	Poll time.Duration
	// Clients is how many inbound messages of A's backlog are posted at once.
	Clients int
}

// The agent numbers of the two accounts, sandbox WhatsApp numbers.
const (
	healthyAgent = "+15550000001"
	noisyAgent   = "+15550000002"
)

// Setup provisions the deployment (its bench account is B) and account A, starts
// the receivers and the server, and creates A's cron jobs.
func (n Noisy) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	a, err := d.AddAccount(ctx, "noisy")
	if err != nil {
		return nil, err
	}
	if _, err := d.AddNumber(ctx, healthyAgent, "whatsapp", "sandbox"); err != nil {
		return nil, err
	}
	if _, err := d.AddNumberTo(ctx, a.AccountID, noisyAgent, "whatsapp", "sandbox"); err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	// The cron jobs are made due from a session of their own, so that their
	// updates never wait behind the polls of B's sends.
	cronDB, err := d.SQL()
	if err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(true)
	if err != nil {
		return nil, err
	}
	if err := d.SetWebhook(ctx, d.AccountID, rc.URL); err != nil {
		return nil, err
	}
	hang := &hanging{stop: make(chan struct{})}
	hookURL, err := hang.listen()
	if err != nil {
		hang.close()
		return nil, err
	}
	cronURLs := make([]string, n.CronJobs)
	for i := range cronURLs {
		if cronURLs[i], err = hang.listen(); err != nil {
			hang.close()
			return nil, err
		}
	}
	if err := d.SetWebhook(ctx, a.AccountID, hookURL); err != nil {
		hang.close()
		return nil, err
	}
	sb, err := d.Serve(ctx, harness.AllowLoopback...)
	if err != nil {
		hang.close()
		return nil, err
	}
	// Registered after the server, so released before it stops (AfterScenario
	// runs last first): the server's calls in flight end instead of holding its
	// shutdown.
	env.AfterScenario(hang.close)
	nb := &neighbours{Noisy: n, sb: sb, a: a, db: db, cronDB: cronDB, rc: rc, hang: hang, log: env.Log,
		lateHooks: map[string]time.Time{}, lateSends: map[string]time.Time{}}
	// A send needs a conversation the user started: each of B's users writes
	// first.
	for i := range n.Users {
		if _, err := nb.inbound(ctx, nb.healthy(), healthyAgent, healthyUser(i)); err != nil {
			return nil, err
		}
	}
	for _, url := range cronURLs {
		if err := nb.createCronJob(ctx, url); err != nil {
			return nil, err
		}
	}
	pullCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		nb.pullCron(pullCtx)
	}()
	env.AfterScenario(func() {
		cancel()
		<-done
	})
	env.AfterRounds(nb.figures)
	return nb.slice, nil
}

// hanging is the noisy account's receivers: servers that read each request's
// headers and never answer, until the scenario ends.
type hanging struct {
	stop    chan struct{}
	once    sync.Once
	servers []*http.Server
	webhook atomic.Int64 // requests to the first server, A's webhook
	cron    atomic.Int64 // requests to the others, A's cron endpoints
}

// listen starts one more hanging receiver and returns its URL.
func (h *hanging) listen() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	counter := &h.cron
	if len(h.servers) == 0 {
		counter = &h.webhook
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		counter.Add(1)
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
	})}
	h.servers = append(h.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/hang", nil
}

func (h *hanging) close() {
	h.once.Do(func() {
		close(h.stop)
		for _, srv := range h.servers {
			_ = srv.Close()
		}
	})
}

type neighbours struct {
	Noisy
	sb     *harness.Switchboard
	a      harness.Account
	db     *harness.SQL
	cronDB *harness.SQL
	rc     *harness.Receiver
	hang   *hanging
	log    *slog.Logger

	warmed bool
	// nextA numbers A's users: each of its inbound messages comes from a new one.
	nextA int
	// nextB numbers B's operations; B's users are nextB modulo Users.
	nextB int
	// The rounds' observations, for the figures: latencies (late ones at
	// Timeout), the late operations' starts by message id, and the measured
	// rounds' wall time and noisy requests received.
	hooks, sends          []time.Duration
	lateHooks, lateSends  map[string]time.Time
	measured              time.Duration
	noisyHooks, noisyCron int64
}

// createCronJob creates one of A's cron jobs through the API, calling url every
// minute.
func (nb *neighbours) createCronJob(ctx context.Context, url string) error {
	body, _ := json.Marshal(map[string]any{"endpoint_url": url, "frequency": "custom", "custom_schedule": "* * * * *",
		"timezone": "Europe/London", "method": "POST", "body": map[string]string{"bench": "noisy"}})
	_, err := nb.post(ctx, "/v1/cron-jobs", nb.a.Header(), body, "id")
	return err
}

// pullCron makes A's active cron jobs due every CronEvery until ctx ends.
func (nb *neighbours) pullCron(ctx context.Context) {
	tick := time.NewTicker(nb.CronEvery)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := nb.cronDB.Exec(ctx, fmt.Sprintf("UPDATE cron_jobs SET next_run_at = %d WHERE account_id = %s AND status = 'active'",
			time.Now().UnixMicro(), harness.Quote(nb.a.AccountID)))
		if err != nil && ctx.Err() == nil && !warned {
			nb.log.Warn("noisy-neighbour: make cron jobs due", "err", err)
			warned = true
		}
	}
}

// post sends a JSON body and returns the string field want of the 2xx answer.
func (nb *neighbours) post(ctx context.Context, path string, header http.Header, body []byte, want string) (string, error) {
	var out map[string]any
	if err := harness.CallAPI(ctx, http.MethodPost, nb.sb.URL+path, header, body, &out); err != nil {
		return "", err
	}
	id, _ := out[want].(string)
	if id == "" {
		return "", fmt.Errorf("POST %s: no %s in the answer", path, want)
	}
	return id, nil
}

func (nb *neighbours) inbound(ctx context.Context, account harness.Account, agent, user string) (string, error) {
	body, _ := json.Marshal(map[string]string{"service": "whatsapp", "from": user, "to": agent, "content": "bench message"})
	return nb.post(ctx, "/v1/sandbox/"+account.AccountID+"/inbound", account.Header(), body, "message_id")
}

func (nb *neighbours) send(ctx context.Context, user string) (string, error) {
	body, _ := json.Marshal(map[string]string{"service": "whatsapp", "from": healthyAgent, "to": user, "content": "bench reply"})
	return nb.post(ctx, "/v1/messages/individual/"+nb.sb.AccountID+"/send", nb.healthy().Header(), body, "message_id")
}

// healthyUser is B's user i.
func healthyUser(i int) string { return fmt.Sprintf("+1556%07d", i) }

func (nb *neighbours) healthy() harness.Account {
	return harness.Account{AccountID: nb.sb.AccountID, APIKey: nb.sb.APIKey, APISecret: nb.sb.APISecret}
}

// topUp posts inbound messages to A, each from a new user, until Queued of its
// webhook deliveries have not been attempted.
func (nb *neighbours) topUp(ctx context.Context) error {
	waiting, err := nb.db.Int(ctx, "SELECT count(*) FROM webhook_deliveries WHERE account_id = "+harness.Quote(nb.a.AccountID)+" AND status = 'pending' AND attempts = 0")
	if err != nil {
		return err
	}
	need := nb.Queued - waiting
	if need <= 0 {
		return nil
	}
	start := time.Now()
	first := nb.nextA
	nb.nextA += need
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	for range min(nb.Clients, need) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(need) || failed.Load() != nil {
					return
				}
				if _, err := nb.inbound(ctx, nb.a, noisyAgent, fmt.Sprintf("+1557%07d", first+int(i))); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fmt.Errorf("noisy backlog: %w", *err)
	}
	nb.log.Info("noisy backlog topped up", "posted", need, "queued", nb.Queued, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// op is one of B's requests, answered: an inbound message (hook) or a send, and
// when its clock started (the answer of an inbound message, the request of a send).
type op struct {
	hook bool
	id   string
	at   time.Time
	err  error
}

func (nb *neighbours) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	warm := !nb.warmed
	nb.warmed = true
	window := nb.Window
	if warm {
		window = d
	}
	if err := nb.topUp(ctx); err != nil {
		return harness.Sample{}, err
	}
	hooks0, cron0 := nb.hang.webhook.Load(), nb.hang.cron.Load()

	var (
		s                harness.Sample
		hookLat, sendLat []time.Duration
		// Requests answered and not yet observed done, and those late, by
		// message id.
		hooks, sends         = map[string]time.Time{}, map[string]time.Time{}
		lateHooks, lateSends = map[string]time.Time{}, map[string]time.Time{}
		results              = make(chan op, 256)
		inflight             int
	)
	fail := func(msg string) {
		s.Failed++
		if s.FirstFailure == "" {
			s.FirstFailure = msg
		}
	}
	ticker := time.NewTicker(nb.Interval)
	defer ticker.Stop()
	issue := ticker.C
	poll := time.NewTicker(nb.Poll)
	defer poll.Stop()
	start := time.Now()
	sending := true
	for sending || inflight > 0 || len(hooks) > 0 || len(sends) > 0 {
		select {
		case <-ctx.Done():
			return harness.Sample{}, ctx.Err()
		case <-issue:
			if time.Since(start) >= window {
				sending, issue = false, nil
				s.Elapsed = time.Since(start)
				continue
			}
			nb.nextB++
			user := healthyUser(nb.nextB % nb.Users)
			inflight += 2
			go func() {
				id, err := nb.inbound(ctx, nb.healthy(), healthyAgent, user)
				results <- op{hook: true, id: id, at: time.Now(), err: err}
			}()
			go func() {
				at := time.Now()
				id, err := nb.send(ctx, user)
				results <- op{id: id, at: at, err: err}
			}()
		case r := <-results:
			inflight--
			switch {
			case r.err != nil:
				fail(r.err.Error())
			case r.hook:
				hooks[r.id] = r.at
			default:
				sends[r.id] = r.at
			}
		case now := <-poll.C:
			for id, at := range hooks {
				if got, ok := nb.rc.Take(id); ok {
					hookLat = append(hookLat, max(got.Sub(at), 0))
					delete(hooks, id)
				} else if now.Sub(at) >= nb.Timeout {
					hookLat = append(hookLat, nb.Timeout)
					lateHooks[id] = at
					delete(hooks, id)
				}
			}
			if len(sends) == 0 {
				continue
			}
			done, failed, err := nb.leftQueued(ctx, sends)
			if err != nil {
				return harness.Sample{}, err
			}
			for _, id := range done {
				sendLat = append(sendLat, max(now.Sub(sends[id]), 0))
				delete(sends, id)
			}
			for _, id := range failed {
				fail("send " + id + " failed")
				delete(sends, id)
			}
			for id, at := range sends {
				if now.Sub(at) >= nb.Timeout {
					sendLat = append(sendLat, nb.Timeout)
					lateSends[id] = at
					delete(sends, id)
				}
			}
		}
	}
	s.Latencies = slices.Concat(hookLat, sendLat)
	s.Ops = len(s.Latencies)
	noisyHooks, noisyCron := nb.hang.webhook.Load()-hooks0, nb.hang.cron.Load()-cron0
	nb.log.Info("noisy-neighbour round", "warm_up", warm, "window", window, "hooks", len(hookLat), "late_hooks", len(lateHooks),
		"sends", len(sendLat), "late_sends", len(lateSends), "noisy_webhook_posts", noisyHooks, "noisy_cron_calls", noisyCron,
		"took", time.Since(start).Round(time.Millisecond))
	if !warm {
		nb.hooks, nb.sends = append(nb.hooks, hookLat...), append(nb.sends, sendLat...)
		maps.Copy(nb.lateHooks, lateHooks)
		maps.Copy(nb.lateSends, lateSends)
		nb.measured += time.Since(start)
		nb.noisyHooks, nb.noisyCron = nb.noisyHooks+noisyHooks, nb.noisyCron+noisyCron
	}
	return s, nil
}

// leftQueued reads which of the sends have left status queued: done (sent,
// delivered or read) or failed.
func (nb *neighbours) leftQueued(ctx context.Context, sends map[string]time.Time) (done, failed []string, err error) {
	ids := make([]string, 0, len(sends))
	for id := range sends {
		ids = append(ids, id)
	}
	rows, err := nb.db.Rows(ctx, "SELECT id, status FROM messages WHERE id IN "+harness.QuoteList(ids)+" AND status <> 'queued'")
	if err != nil {
		return nil, nil, fmt.Errorf("send statuses: %w", err)
	}
	for _, r := range rows {
		if len(r) != 2 {
			return nil, nil, fmt.Errorf("send statuses: row %q", r)
		}
		if r[1] == "failed" {
			failed = append(failed, r[0])
		} else {
			done = append(done, r[0])
		}
	}
	return done, failed, nil
}

// figures reports B's two latencies against the issue's target (p99 ≤ 1 s each), how
// many operations were late and what became of them, and how much noise A's
// receivers saw.
func (nb *neighbours) figures(ctx context.Context, _ harness.Rounds) []harness.Figure {
	return append(nb.latencyFigures(), nb.lateFigures(ctx)...)
}

// lateFigures says, for each kind of B's late operations, how many were done by the
// end of the rounds and how long the oldest still waiting had waited: how late the
// late ones are, beyond Timeout.
func (nb *neighbours) lateFigures(ctx context.Context) []harness.Figure {
	now := time.Now()
	waited := func(late map[string]time.Time, done func(id string) bool) (int, time.Duration) {
		n, oldest := 0, time.Duration(0)
		for id, at := range late {
			if done(id) {
				n++
			} else {
				oldest = max(oldest, now.Sub(at))
			}
		}
		return n, oldest
	}
	var out []harness.Figure
	figure := func(name string, late map[string]time.Time, done int, oldest time.Duration) {
		if len(late) == 0 {
			return
		}
		out = append(out, harness.Figure{Name: name + " late, done by the end", Value: float64(done), Unit: "ops",
			Detail: fmt.Sprintf("of %d late; the oldest of the %d still waiting had waited %s", len(late), len(late)-done, oldest.Round(time.Second))})
	}
	done, oldest := waited(nb.lateHooks, func(id string) bool { _, ok := nb.rc.Take(id); return ok })
	figure("B webhook", nb.lateHooks, done, oldest)
	if len(nb.lateSends) > 0 {
		sent, failed, err := nb.leftQueued(ctx, nb.lateSends)
		if err != nil {
			return append(out, harness.FigureError("B send late, done by the end", err))
		}
		left := slices.Concat(sent, failed)
		done, oldest := waited(nb.lateSends, func(id string) bool { return slices.Contains(left, id) })
		figure("B send", nb.lateSends, done, oldest)
	}
	return out
}

// latencyFigures reports B's two latencies against the issue's target, how many
// operations were late, and the noise A's receivers saw.
func (nb *neighbours) latencyFigures() []harness.Figure {
	limit := float64(time.Second / time.Millisecond)
	var out []harness.Figure
	for _, k := range []struct {
		name string
		lat  []time.Duration
		late int
		what string
	}{
		{"B webhook", nb.hooks, len(nb.lateHooks), "inbound message accepted (2xx) to its delivery read by B's receiver"},
		{"B send", nb.sends, len(nb.lateSends), "send request sent to the message leaving queued (read every " + nb.Poll.String() + ")"},
	} {
		if len(k.lat) == 0 {
			out = append(out, harness.Figure{Name: k.name + " p99", Error: "no operations measured"})
			continue
		}
		sorted := slices.Sorted(slices.Values(k.lat))
		bound := ""
		if k.late > 0 {
			bound = fmt.Sprintf("; %d of %d not done within %s, counted at %s: the percentiles are lower bounds", k.late, len(sorted), nb.Timeout, nb.Timeout)
		}
		ms := func(p float64) float64 { return float64(harness.Percentile(sorted, p)) / float64(time.Millisecond) }
		out = append(out,
			harness.Figure{Name: k.name + " p50", Value: ms(50), Unit: "ms", Detail: k.what},
			harness.Figure{Name: k.name + " p99", Value: ms(99), Unit: "ms", Max: &limit, Detail: "issue 22 target" + bound},
			harness.Figure{Name: k.name + " max", Value: ms(100), Unit: "ms"},
			harness.Figure{Name: k.name + " late (> " + nb.Timeout.String() + ")", Value: float64(k.late), Unit: "ops",
				Detail: fmt.Sprintf("of %d", len(sorted))},
		)
	}
	if secs := nb.measured.Seconds(); secs > 0 {
		out = append(out,
			harness.Figure{Name: "A webhook POSTs received", Value: float64(nb.noisyHooks) / secs, Unit: "/s",
				Detail: "at A's hanging webhook receiver, during the rounds"},
			harness.Figure{Name: "A cron calls received", Value: float64(nb.noisyCron) / secs, Unit: "/s",
				Detail: fmt.Sprintf("at A's %d hanging cron endpoints, during the rounds", nb.CronJobs)})
	}
	return out
}
