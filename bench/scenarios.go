package main

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/bench/agents"
	"github.com/switchboard-dev/switchboard/bench/cron"
	"github.com/switchboard-dev/switchboard/bench/email"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/bench/messaging"
	"github.com/switchboard-dev/switchboard/bench/queue"
	"github.com/switchboard-dev/switchboard/bench/webhooks"
)

// scenarios is the registry `go run ./bench` chooses from. Add a scenario by appending
// an entry: its Setup reuses the run's servers through env and returns one slice of
// load; its Baseline says what it is compared with.
var scenarios = []harness.Scenario{
	{
		Name:        "accounts-get",
		Description: "authenticated GET /v1/accounts/{accountId} vs a hello-world Go server",
		Target:      0.5,
		Unit:        "requests",
		Baseline:    harness.HelloWorld(),
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			sb, err := env.Switchboard(ctx)
			if err != nil {
				return nil, err
			}
			return env.HTTPLoad(harness.Get(sb.URL+"/v1/accounts/"+sb.AccountID, sb.Header())).Run, nil
		},
	},
	{
		// The job queue (issue 3) through the server; see package queue for how
		// each is measured.
		Name: "queue-drain",
		Description: fmt.Sprintf("server runner (--job-workers %d, so claims of up to %[1]d; pool %d) draining pre-queued jobs that find nothing to do (deliveries of absent messages) vs pgbench single-row inserts at 64 clients",
			drain.Workers, drain.MaxConns),
		Target:    3.0,
		Unit:      "jobs",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     drain.Setup,
	},
	{
		// Issue 38: the claim's cost does not grow with the accounts holding due
		// jobs (a claim visits at most as many accounts as it may take jobs, and
		// the next claim goes on from the last it visited).
		Name: "queue-claim-accounts",
		Description: fmt.Sprintf("queue-drain (--job-workers %d, pool %d) with the jobs spread over %d accounts, each holding due jobs, vs the same drain with them spread over %d accounts",
			drain.Workers, drain.MaxConns, claimMany.Accounts, claimFew.Accounts),
		Target:    0.5,
		Unit:      "jobs",
		Databases: []string{"postgres"},
		Baseline:  harness.Baseline{Name: fmt.Sprintf("queue-drain-%d-accounts", claimFew.Accounts), Unit: "jobs", Setup: claimFew.Setup},
		Setup:     claimMany.Setup,
	},
	{
		Name: "queue-enqueue",
		Description: fmt.Sprintf("%d producers each posting email sends to an API-only server (pool %d, up during its slices only): one job (and its email) committed per shared-transaction call, counted in the table, vs pgbench single-row inserts at 64 clients",
			enqueue.Producers, enqueue.MaxConns),
		Target:    1.0,
		Unit:      "jobs",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     enqueue.Setup,
	},
	{
		// Latency runs the server's runner with its defaults.
		Name:        "queue-latency",
		Description: "commit to handler start, one job committed every 10 ms (a sandbox inbound message's answer to its webhook delivery's POST at a receiver on 127.0.0.1), server with the default runner",
		Latency: &harness.LatencyGoal{P50: map[string]time.Duration{
			"postgres": 20 * time.Millisecond,
			"sqlite":   100 * time.Millisecond,
		}},
		Unit:  "jobs",
		Setup: queue.Latency{Interval: 10 * time.Millisecond, StartTimeout: 10 * time.Second}.Setup,
	},
	{
		// The messaging API (issue 4) through the real server; see package messaging.
		Name: "messages-send",
		Description: fmt.Sprintf("POST individual send, %d clients, %d users of %d agent numbers, API-only server (--jobs=false: delivery does not compete; pool %d) vs pgbench single-row inserts at 64 clients",
			send.Clients, send.Users, send.Numbers, send.MaxConns),
		Target:    1.0,
		Unit:      "sends",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     send.Setup,
	},
	{
		Name: "messages-read",
		Description: fmt.Sprintf("GET get-details of a random message / get-recent of a random thread, alternately, %d clients, %d messages in %d threads vs pgbench primary-key lookups in 1M rows at 16 clients",
			read.Clients, read.Messages, read.Threads),
		Target:    0.6,
		Unit:      "requests",
		Databases: []string{"postgres"},
		Baseline:  lookupOne.Baseline(),
		Setup:     read.Setup,
	},
	{
		// Issue 25: a thread's full history, paged by keyset, costs the same at
		// any depth; the targets are the two p99 ratios, figures of their own.
		Name: "messages-history",
		Description: fmt.Sprintf("GET get-messages (limit %d): page 1 and the page next to the oldest message, on a %d-message and a %d-message thread of one deployment, %d clients per fetch, all four at once; API-only server (pool %d)",
			history.Limit, history.Large, history.Small, history.Clients, history.MaxConns),
		Latency:   &harness.LatencyGoal{P50: map[string]time.Duration{"postgres": 20 * time.Millisecond}},
		Unit:      "pages",
		Databases: []string{"postgres"}, // the history is written with SQL
		Setup:     history.Setup,
	},
	{
		// Issue 25: the MCP server's wait_for_message; the target is the p99, a
		// figure of its own.
		Name: "mcp-wait",
		Description: fmt.Sprintf("%d MCP sessions (the Go SDK's client) each calling wait_for_message on a thread of its own; %s after each call, the thread's user sends a message (sandbox inbound): from sending it to the call's answer, server with its defaults",
			mcpWait.Waiters, mcpWait.Settle),
		Latency: &harness.LatencyGoal{P50: map[string]time.Duration{
			"postgres": 20 * time.Millisecond,
			"sqlite":   20 * time.Millisecond,
		}},
		Unit: "wake-ups",
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			env.AfterRounds(p99Figure("wake-up p99", 50, "issue 25 target: p99 from the inbound message to the waiting call's answer, over all rounds"))
			return mcpWait.Setup(ctx, env)
		},
	},
	{
		Name: "messages-dispatch",
		Description: fmt.Sprintf("server runner (--job-workers %d, pool %d) delivering queued messages through the sandbox, spread over %d numbers so per-number pacing never binds, vs pgbench single-row inserts at 64 clients",
			dispatch.Workers, dispatch.MaxConns, dispatch.Numbers),
		Target:    1.0,
		Unit:      "messages",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     dispatch.Setup,
	},
	{
		// Issue 38: three replicas on one Postgres deliver at least as fast as one of
		// the same size; the cluster's shares and breakers cost its claims little.
		Name: "messages-dispatch-3",
		Description: fmt.Sprintf("messages-dispatch through three servers at once on one database, each with a third of the workers and pool (--job-workers %d, pool %d), vs through one server (--job-workers %d, pool %d); each side with its own deployment",
			(dispatch.Workers+2)/3, (dispatch.MaxConns+2)/3, dispatch.Workers, dispatch.MaxConns),
		Target:    1.0,
		Unit:      "messages",
		Databases: []string{"postgres"},
		Baseline:  harness.Baseline{Name: "messages-dispatch-1", Unit: "messages", Setup: dispatch.Replicated(1)},
		Setup:     dispatch.Replicated(3),
	},
	{
		Name: "messages-send-3",
		Description: fmt.Sprintf("messages-send's closed loop through three API-only servers at once on one database, each with a third of the clients and pool (pool %d), vs through one (pool %d); each side with its own deployment",
			(send.MaxConns+2)/3, send.MaxConns),
		Target:    1.0,
		Unit:      "sends",
		Databases: []string{"postgres"},
		Baseline:  harness.Baseline{Name: "messages-send-1", Unit: "sends", Setup: send.Replicated(1)},
		Setup:     send.Replicated(3),
	},
	{
		// Issue 39: the history pruner beside sends.
		Name: "history-pruner",
		Description: fmt.Sprintf("POST individual send, %d clients, %d users of %d agent numbers, server with jobs (sandbox delivery, every event to a receiver; pool %d) whose pruner deletes the history older than %s every %s, vs the same sends with the pruner off; each side on a deployment of its own, its server up during its slices only",
			historyPruner.Clients, historyPruner.Users, historyPruner.Numbers, historyPruner.MaxConns, historyPruner.PrunedFor, historyPruner.PrunedEvery),
		Target:    0.95,
		Unit:      "sends",
		Databases: []string{"postgres"},
		Baseline:  historyPruner.Baseline(),
		Setup:     historyPruner.Setup,
	},
	{
		// Issue 39: what messages cost on disk; the figures are the result,
		// the latency of the traffic a check that it ran at its rate.
		Name: "storage",
		Description: fmt.Sprintf("steady traffic, %g messages a second (open loop, half sandbox inbound and half individual sends) over %d threads, server with jobs and a webhook on every event (pool %d); POST latency; threads' growth per message (≤ %g B) and its size on disk against compacted; then the bytes per message of %d messages (BENCH_STORAGE_MESSAGES) with history kept 30 days and %s",
			storage.Rate, storage.Users, storage.MaxConns, storage.ThreadsGrowth, storage.Messages, storage.Retention),
		Latency:   &harness.LatencyGoal{P50: map[string]time.Duration{"postgres": 100 * time.Millisecond}},
		Unit:      "messages",
		Databases: []string{"postgres"}, // the storage is read with SQL
		Setup:     storage.Setup,
	},
	{
		// Crash recovery: the successor sees the killed server's process
		// dead (its lock free for the 1.5 s grace period) and takes its
		// deliveries at once, long before their 10 s leases end (issue 38).
		Name: "recovery",
		Description: fmt.Sprintf("SIGKILL of a server (--job-workers %d) %s into delivering %d queued messages, successor started at once: kill until every delivery job running at the kill has completed",
			recovery.Workers, recovery.Run, recovery.Queued),
		Latency:   &harness.LatencyGoal{P50: map[string]time.Duration{"postgres": 3 * time.Second}},
		Unit:      "recoveries",
		Databases: []string{"postgres"},
		Setup:     recovery.Setup,
	},
	// Cron (issue 8): S4 and S5 with one and three schedulers; see package cron.
	cronPrecision(1),
	cronPrecision(3),
	cronBurst(1),
	cronBurst(3),
	{
		// The email API (issue 9) through the real server; see package email.
		Name:        "emails-send",
		Description: fmt.Sprintf("POST /v1/emails/{account_id}/send, %d clients, API-only server (--jobs=false; pool %d) vs pgbench single-row inserts at 64 clients", emailSend.Clients, emailSend.MaxConns),
		Target:      0.8,
		Unit:        "emails",
		Databases:   []string{"postgres"},
		Baseline:    insertOne.Baseline(),
		Setup:       emailSend.Setup,
	},
	{
		Name: "emails-deliver",
		Description: fmt.Sprintf("%d queued emails delivered per slice to a go-smtp server on 127.0.0.1 (--job-workers %d, pool %d, %d SMTP connections) vs pgbench single-row inserts at 64 clients",
			emailDeliver.Emails, emailDeliver.Workers, emailDeliver.MaxConns, emailDeliver.SMTPPool),
		Target:    0.25,
		Unit:      "emails",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     emailDeliver.Setup,
	},
	{
		// Receiving email (issue 37): the rate the issue asks for, held without loss;
		// the peak memory is a figure of its own.
		Name: "emails-receive",
		Description: fmt.Sprintf("%d SMTP connections (net/smtp) delivering %d messages of %d KB a second in all to the listener (--smtp-max-connections %d, --smtp-max-message-bytes %d MiB), server with the default runner: MAIL FROM to the email.received delivery read by a receiver on 127.0.0.1; every message answered 250 delivered",
			emailReceive.Connections, emailReceive.Rate, emailReceive.Size>>10, emailReceive.MaxConnections, emailReceive.MaxMessageBytes>>20),
		Latency: &harness.LatencyGoal{P50: map[string]time.Duration{
			"postgres": time.Second,
			"sqlite":   time.Second,
		}},
		Unit: "messages",
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			env.AfterRounds(p99Figure("receive p99", 2000, "from MAIL FROM to the email.received delivery, over all rounds"))
			return emailReceive.Setup(ctx, env)
		},
	},
	{
		// Customer webhooks (issue 7); see package webhooks.
		Name: "webhooks-fanout",
		Description: fmt.Sprintf("server runner (--job-workers %d, pool %d) posting signed webhook deliveries of >= %d inbound messages (one thread each) to a receiver on 127.0.0.1 vs pgbench single-row inserts at 64 clients",
			fanout.Workers, fanout.MaxConns, fanout.MinQueued),
		Target:    0.5,
		Unit:      "deliveries",
		Databases: []string{"postgres"},
		Baseline:  insertOne.Baseline(),
		Setup:     fanout.Setup,
	},
	{
		Name:        "webhooks-latency",
		Description: "inbound sandbox message (request sent) to its webhook delivery read by a receiver on 127.0.0.1, one message every 10 ms, server with the default runner",
		Latency: &harness.LatencyGoal{P50: map[string]time.Duration{
			"postgres": 50 * time.Millisecond,
			"sqlite":   50 * time.Millisecond,
		}},
		Unit:  "messages",
		Setup: webhooks.Latency{Interval: 10 * time.Millisecond, Users: 1000, Timeout: 10 * time.Second}.Setup,
	},
	{
		// Issue 22: a tenant whose receivers hang must not hold up another's
		// deliveries and sends; the target is the p99 ≤ 1 s, a figure of
		// each of the two latencies.
		Name: "noisy-neighbour",
		Description: fmt.Sprintf("account A: %d webhook deliveries queued, its webhook and %d cron endpoints on 127.0.0.1 hanging; account B, beside it on one server with the default runner: inbound message to its webhook delivery and send to leaving queued, each every %s for %s",
			noisy.Queued, noisy.CronJobs, noisy.Interval, noisy.Window),
		Latency: &harness.LatencyGoal{P50: map[string]time.Duration{
			"postgres": time.Second,
		}},
		Unit: "operations",
		// Its cron jobs are made due and B's sends read with SQL.
		Databases: []string{"postgres"},
		Setup:     noisy.Setup,
	},
	// The ceilings bound what any HTTP scenario can reach against its pgbench baseline
	// on this machine: the scenario's own client and concurrency, against a server that
	// neither parses nor stores (the hello-world server).
	ceiling("http-ceiling", "POST of emails-send's body from the same lean clients to the hello-world server (nothing parsed or stored) vs pgbench single-row inserts at 64 clients: the ceiling of messages-send and emails-send",
		insertOne, emailSend.Clients, func(url string) harness.RequestFunc {
			return harness.Post(url+"/v1/emails/acc_x/send", nil, email.SampleBody())
		}),
	ceiling("http-read-ceiling", "GET from messages-read's lean clients to the hello-world server vs pgbench primary-key lookups in 1M rows at 16 clients: the ceiling of messages-read",
		lookupOne, read.Clients, func(url string) harness.RequestFunc {
			return harness.Get(url+"/v1/messages/acc_x/get-details/msg_x", nil)
		}),
	{
		// self-check proves the method: two identical servers must come out at a ratio
		// near 1.0, however noisy the machine.
		Name:        "self-check",
		Description: "hello-world vs hello-world, two processes; the ratio should be ≈ 1.0",
		Target:      0.8,
		Baseline:    harness.HelloWorld(),
		Manual:      true,
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			srv, err := env.StartHelloWorld(ctx)
			if err != nil {
				return nil, err
			}
			return env.HTTPLoad(harness.Get(srv.URL+"/hello", nil)).Run, nil
		},
	},
	{
		// pgbench-self-check proves the pgbench baseline runner the same way: pgbench
		// against itself must come out near 1.0. Needs -database postgres.
		Name:        "pgbench-self-check",
		Description: "pgbench SELECT 1 vs itself at 16 clients; the ratio should be ≈ 1.0",
		Target:      0.8,
		Databases:   []string{"postgres"},
		Baseline:    selectOne.Baseline(),
		Manual:      true,
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			return selectOne.Baseline().Setup(ctx, env)
		},
	},
}

// emailSend's pool leaves room beside pgbench's 64 clients, the harness's 2 and the
// run's shared server's 8 for the other test processes a shared Postgres serves.
var emailSend = email.Send{Clients: 64, MaxConns: 10}

// emailDeliver delivers 10,000 emails per slice; the runner's workers wait for one
// of the SMTPPool connections, which a relay would limit the same way.
// emailReceive is the rate of issue 37: 100 messages of 50 KB a second over 10
// connections. The listener's bounds (1 MiB messages, 20 connections) leave room for
// the bench's messages and bound the memory the figure checks.
var emailReceive = email.Receive{Connections: 10, Rate: 100, Size: 50 << 10, MaxMessageBytes: 1 << 20, MaxConnections: 20,
	MemoryHeadroom: 64 << 20, Timeout: 30 * time.Second}

var emailDeliver = email.Deliver{Emails: 10_000, Workers: 64, MaxConns: 16, SMTPPool: 8, Timeout: 2 * time.Minute}

var selectOne = harness.PGBench{Name: "pgbench-select-1", Script: "SELECT 1;\n", Clients: 16}

// drain's runner is tuned for throughput through its workers alone: with handlers
// that return at once, the claim statement is the bottleneck, so the runner claims
// as many jobs per statement as it can start. Workers bounds both the jobs in flight
// and the claim (a claim takes at most the free workers, and the server claims up to
// its workers' number per statement). The server runs only during its slices, so its
// pool does not meet pgbench's.
var drain = queue.Drain{
	Workers:    1000,
	MaxConns:   8,
	MinPending: 100_000,
	Settle:     250 * time.Millisecond,
}

// claimMany and claimFew are drain's runner on jobs of 10,000 accounts and of 10:
// the claim's cost with many accounts holding due jobs against its cost with few.
var (
	claimMany = withAccounts(drain, 10_000)
	claimFew  = withAccounts(drain, 10)
)

func withAccounts(d queue.Drain, n int) queue.Drain {
	d.Accounts = n
	return d
}

// enqueue gives its server a connection per producer; the server runs only during
// its slices, so its pool does not meet pgbench's.
var enqueue = queue.Enqueue{Producers: 64, MaxConns: 64, Warm: 500 * time.Millisecond, TruncateAbove: 1_000_000}

// send is the messages-send scenario. Its pool (20) stays open beside pgbench's 64
// clients, the harness's 2 and the run's shared server's 8: 94 of Postgres's 100.
var send = messaging.Send{
	Clients:          64,
	Users:            256,
	Numbers:          64,
	MaxConns:         20,
	OpenLoopShare:    0.5,
	OpenLoopP99:      20 * time.Millisecond,
	OpenLoopWorkers:  256,
	OpenLoopBaseline: insertOne,
	StatsQuiet:       11 * time.Second,
}

var read = messaging.Read{Clients: 16, Messages: 1_000_000, Threads: 10_000}

// history's pool, like read's, stays open beside pgbench's; it has no baseline,
// so it never meets pgbench's 64 clients.
// mcpWait's waiters each take a message about every Settle, 100 a second in all.
var mcpWait = agents.Wait{Waiters: 10, Settle: 100 * time.Millisecond, Timeout: 5 * time.Second}

var history = messaging.History{Clients: 2, Large: 1_000_000, Small: 10_000, Limit: 20, MaxConns: 8, P99Ratio: 1.5}

// fanout's server, like dispatch's, runs only during its slices. A delivery's job
// mostly waits (the claim, the receiver, the shared commit of its outcome), so the
// runner gets many workers (bench/RESULTS.md compares 512 with 128 and 1024).
var fanout = webhooks.Fanout{MinQueued: 30_000, Workers: 512, MaxConns: 32, Settle: 250 * time.Millisecond}

// dispatch's server runs only during its slices, so its pool does not meet pgbench's.
// Its deliveries, like fanout's, mostly wait on shared commits, so more of them in
// flight make larger batches (bench/RESULTS.md compares 512 workers with 256 and
// 1024, and a pool of 32 with 16).
// Its 500 numbers, paced at 80 messages a second each, could take 40,000 a second:
// pacing binds at no rate the machine reaches (pgbench's inserts, which a ratio of
// 1 would have to match, at most 24,000). Each number is added by a CLI command, a
// tenth of a CPU second.
var dispatch = messaging.Dispatch{
	Numbers:   500,
	MinQueued: 100_000,
	Workers:   512,
	MaxConns:  32,
	Settle:    250 * time.Millisecond,
}

// historyPruner is issue 39's: sends beside a pruner that always has work (history
// kept two seconds, a pass every second).
var historyPruner = messaging.Pruner{
	Clients:     32,
	Users:       1000,
	Numbers:     16,
	MaxConns:    16,
	PrunedFor:   2 * time.Second,
	PrunedEvery: time.Second,
}

// storage is issue 39's storage figures: steady traffic of 200 messages a second
// over 500 threads (each thread's activity moves every 2.5 s), then the bytes per
// message of 10,000 messages (BENCH_STORAGE_MESSAGES for more; the figure
// is for 100,000) over 2,000 threads with history kept 30 days and 30 seconds.
var storage = messaging.Storage{
	Users:         500,
	Numbers:       16,
	Clients:       32,
	MaxConns:      16,
	Rate:          200,
	ThreadsGrowth: 16,
	Messages:      10_000,
	MessageUsers:  2000,
	Retention:     30 * time.Second,
	Interval:      5 * time.Second,
	Timeout:       30 * time.Minute,
}

// recovery kills a server that delivers at its ordinary pace (as dispatch's, on
// fewer numbers) with most workers busy.
var recovery = messaging.Recovery{
	Numbers: 200,
	Queued:  20_000,
	Workers: 256,
	Run:     time.Second,
	Timeout: time.Minute,
}

// noisy is the noisy-neighbour scenario: A's backlog and the 50 hanging receivers
// of issue 22 (its webhook and 49 cron endpoints), B's operations waited for 10 s
// each, so a round takes about half a minute even when none comes.
var noisy = webhooks.Noisy{
	Queued:    5000,
	CronJobs:  49,
	CronEvery: time.Second,
	Interval:  100 * time.Millisecond,
	Users:     100,
	Window:    20 * time.Second,
	Timeout:   10 * time.Second,
	Poll:      20 * time.Millisecond,
	Clients:   32,
}

// lookupOne is what Postgres sustains for the smallest read: a primary-key lookup in
// a table of a million rows, at the read scenario's concurrency. The count(*) after
// the load sets the rows' hint bits, so the first lookups do not write.
var lookupOne = harness.PGBench{
	Name: "pgbench-lookup",
	Init: `CREATE TABLE IF NOT EXISTS bench_lookup (id bigint PRIMARY KEY, body text NOT NULL);
		INSERT INTO bench_lookup SELECT i, md5(i::text) FROM generate_series(1, 1000000) AS i
			WHERE NOT EXISTS (SELECT FROM bench_lookup);
		ANALYZE bench_lookup;
		SELECT count(*) FROM bench_lookup;`,
	Script:  "\\set id random(1, 1000000)\nSELECT * FROM bench_lookup WHERE id = :id;\n",
	Clients: 16,
}

// ceiling is a manual scenario: the hello-world server under clients lean workers
// sending request, against baseline. It has no target of its own; the ratio it
// prints is the most an HTTP scenario against that baseline can reach here, and its
// CPU per request the least an HTTP exchange costs the server.
func ceiling(name, description string, baseline harness.PGBench, clients int, request func(url string) harness.RequestFunc) harness.Scenario {
	return harness.Scenario{
		Name: name, Description: description, Unit: "requests", Manual: true,
		Databases: []string{"postgres"}, Baseline: baseline.Baseline(),
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			srv, err := env.StartHelloWorld(ctx)
			if err != nil {
				return nil, err
			}
			load := harness.NewLeanHTTPLoad(clients, request(srv.URL)).Run
			env.AfterRounds(harness.CPUFollowUp("CPU per request", "request", harness.Metered(srv.PID(), load)))
			return load, nil
		},
	}
}

// insertOne is what Postgres sustains for the smallest durable write: one row per
// transaction, each commit waiting for its WAL flush (synchronous_commit as the server
// has it, on by default), at the queue scenarios' concurrency.
var insertOne = harness.PGBench{
	Name:    "pgbench-insert",
	Init:    "CREATE TABLE IF NOT EXISTS bench_insert (id bigserial PRIMARY KEY, body text NOT NULL)",
	Script:  "INSERT INTO bench_insert (body) VALUES ('x');\n",
	Clients: 64,
}

// cronPrecision is S4: 10,000 jobs a minute, slots spread evenly, lateness of each
// call at the endpoint; the p99 target (50 ms) is a figure of its own. Run it with
// -rounds 12 -slice 5s for one minute of jobs.
func cronPrecision(replicas int) harness.Scenario {
	return harness.Scenario{
		Name:        fmt.Sprintf("cron-s4-%d", replicas),
		Description: fmt.Sprintf("S4: 10,000 cron jobs a minute, slots spread evenly, %d server replica(s) with own pools; lateness of each call at a local endpoint against its slot", replicas),
		Latency:     &harness.LatencyGoal{P50: map[string]time.Duration{"postgres": 20 * time.Millisecond}},
		Unit:        "calls",
		Databases:   []string{"postgres"}, // the jobs are written with SQL
		Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
			env.AfterRounds(p99Figure("lateness p99", 50, "S4 target: p99 of call arrival minus slot, over all rounds"))
			return cron.Precision{Replicas: replicas, JobsPerMinute: 10_000, Lead: 500 * time.Millisecond}.Setup(ctx, env)
		},
	}
}

// p99Figure is a latency scenario's follow-up reporting the p99 of all its rounds
// against a target of maxMs milliseconds.
func p99Figure(name string, maxMs float64, detail string) harness.FollowUp {
	return func(_ context.Context, r harness.Rounds) []harness.Figure {
		if r.Result.Measured.Latency == nil {
			return nil
		}
		return []harness.Figure{{Name: name, Value: r.Result.Measured.Latency.P99ms, Unit: "ms", Max: &maxMs, Detail: detail}}
	}
}

// cronBurst is S5: 10,000 jobs due at the same instant; the latency is the time from
// the slot until every call is made and recorded (target 5 s).
func cronBurst(replicas int) harness.Scenario {
	return harness.Scenario{
		Name:        fmt.Sprintf("cron-s5-%d", replicas),
		Description: fmt.Sprintf("S5: 10,000 cron jobs due at one instant, %d server replica(s) with own pools; time from the slot until all are called and recorded", replicas),
		Latency:     &harness.LatencyGoal{P50: map[string]time.Duration{"postgres": 5 * time.Second}},
		Unit:        "bursts",
		Databases:   []string{"postgres"}, // the jobs are written with SQL
		Setup:       cron.Burst{Replicas: replicas, Jobs: 10_000, Lead: 2 * time.Second, Timeout: 60 * time.Second}.Setup,
	}
}
