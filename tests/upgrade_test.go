package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

// The rolling upgrade's rhythm.
const (
	// upgradeCronJobs is how many cron jobs fire, one a second, through
	// the roll (each once at its own second, then every minute).
	upgradeCronJobs = 20
	// upgradeSendEvery is the pause between two sends of one sender.
	upgradeSendEvery = 40 * time.Millisecond
	// upgradeStep is how long each state of the roll (old build on the
	// new schema, each mix of builds) serves the load.
	upgradeStep = 2 * time.Second
	// upgradeSettle bounds how long the work accepted during the roll may
	// take to be done once the load stops: a killed old replica's work
	// waits for its leases (20 s for webhook deliveries), as the previous
	// release registers no process whose death others could see.
	upgradeSettle = 45 * time.Second
	// upgradeUsers is how many users the sends go to.
	upgradeUsers = 24
)

// upgradeUser is the phone number of the ith user.
func upgradeUser(i int) string { return fmt.Sprintf("+1415555%04d", 200+i) }

// Three replicas of the previous release serve steady sends, cron runs
// every second and webhook deliveries behind a load balancer. The new
// build migrates the database under them, then replaces them one at a
// time: each is taken out of the balancer, stopped with SIGTERM and
// replaced by a replica of this build. Every request is answered 2xx, or
// 503 with Retry-After (retried with the same Idempotency-Key); every
// accepted send is stored once and reaches the provider once; every cron
// slot is called once; every webhook delivery arrives once.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	t.Parallel()
	rig := newUpgradeRig(t, false)
	rig.start(t)
	rig.migrate(t)
	for i := range rig.replicas {
		rig.replace(t, i, false)
		time.Sleep(upgradeStep)
	}
	rig.finish(t)
}

// The same roll under faults: a replica is killed with SIGKILL at every
// step (an old one after the migration, restarted as the old build on the
// new schema; each old one instead of being stopped; a new one at the
// end), and Postgres restarts mid-roll (a fault proxy drops every
// connection and refuses new ones for a second) while both builds serve.
// Nothing accepted is lost; the only requests without an answer are those
// in flight at a killed replica; a send reaches the provider twice, a
// webhook delivery or a cron call arrives twice, only when it was in
// flight at a kill, the documented at-least-once cases
// (docs/guarantees.md).
func TestRollingUpgradeWithKillsAndADatabaseRestart(t *testing.T) {
	t.Parallel()
	rig := newUpgradeRig(t, true)
	rig.start(t)
	rig.migrate(t)
	// An old replica dies after the migration and comes back as it was:
	// the previous release starts on the new schema.
	rig.kill(t, 0)
	rig.replicas[0] = rig.serve(t, rig.old)
	rig.lb.add(rig.replicas[0])
	time.Sleep(upgradeStep)
	for i := range rig.replicas {
		rig.replace(t, i, true)
		if i == 0 {
			// Both builds serve when the database restarts.
			rig.proxy.SetRefuse(true)
			rig.restarts = append(rig.restarts, time.Now())
			rig.proxy.Reset()
			time.Sleep(time.Second)
			rig.proxy.SetRefuse(false)
		}
		time.Sleep(upgradeStep)
	}
	// A replica of the new build dies too, and comes back.
	rig.kill(t, 0)
	rig.replicas[0] = rig.serve(t, rig.b)
	rig.lb.add(rig.replicas[0])
	time.Sleep(upgradeStep)
	rig.finish(t)
}

// A database migrated by a newer build (here: one more migration row and
// the column it added) is served by this one: the server logs the
// migration it does not know, by name, and serves; this build's migrate
// finds nothing to do. An older replica does so in every rolling upgrade.
func TestSchemaAheadOfTheBuildIsServed(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		b := setup(t, dialect)
		acct := b.createAccount(t, "Ahead")
		const future = "20991231000000"
		db, err := store.Open(ctx, b.dbURL, store.Options{})
		require.NoError(t, err)
		_, err = db.Bun().NewRaw("ALTER TABLE accounts ADD COLUMN future_setting TEXT").Exec(ctx)
		require.NoError(t, err)
		_, err = db.Bun().NewRaw("INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, 999, ?)", future, time.Now()).Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, db.Close())

		stdout, stderr, code := b.cli(t, "migrate")
		require.Equal(t, 0, code, "migrate: %s", stderr)
		require.Contains(t, stdout, "nothing to apply")

		srv := b.serve(t)
		srv.waitReady(t)
		require.Contains(t, srv.stderr.String(), "the database has migrations this build does not know")
		require.Regexp(t, `migrations="?\[`+future+`\]`, srv.stderr.String())
		r := srv.client(t).Do(http.MethodGet, "/v1/accounts/"+acct.AccountID, nil, auth(acct.APIKey, acct.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		srv.stop(t)
	})
}

// A cron run of the previous release whose call failed, with a retry to
// come, is retried by this release when it replaces the previous one:
// releases from before cron runs were queue jobs kept retries in the
// execution row alone, which this release adopts. The retry carries the
// first call's Idempotency-Key and the run ends a success.
func TestCronRetryOfThePreviousReleaseIsMade(t *testing.T) {
	t.Parallel()
	prev := previousRelease(t)
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		b := setupEmpty(t, dialect)
		old := b.withBinary(prev)
		_, stderr, code := old.cli(t, "migrate")
		require.Equal(t, 0, code, "migrate: %s", stderr)
		acct := old.createAccount(t, "Retries")
		var mu sync.Mutex
		calls := map[string]int{}
		endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls[r.Header.Get("Idempotency-Key")]++
			first := calls[r.Header.Get("Idempotency-Key")] == 1
			mu.Unlock()
			if first {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(endpoint.Close)

		srv := old.serve(t, "--allow-private-urls", "127.0.0.1/32")
		r := srv.client(t).Do(http.MethodPost, "/v1/cron-jobs", map[string]any{"endpoint_url": endpoint.URL + "/tick", "frequency": "custom",
			"custom_schedule": "0 0 1 1 *", "timezone": "UTC", "method": "POST", "retries": 1}, auth(acct.APIKey, acct.APISecret)...)
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
		jobID := r.JSON(t)["id"].(string)
		db, err := store.Open(ctx, b.dbURL, store.Options{})
		require.NoError(t, err)
		defer db.Close()
		// Due in a second (schedules have minutes; this one is yearly).
		_, err = db.Bun().NewRaw("UPDATE cron_jobs SET next_run_at = ? WHERE id = ?", time.Now().Add(time.Second).UnixMicro(), jobID).Exec(ctx)
		require.NoError(t, err)
		var status string
		require.Eventually(t, func() bool {
			var s []string
			require.NoError(t, db.Bun().NewRaw("SELECT status FROM cron_executions WHERE job_id = ?", jobID).Scan(ctx, &s))
			status = strings.Join(s, ",")
			return status == "retrying"
		}, chWait, chTick, "the previous release's call failed and its retry waits (%s)", status)
		srv.stop(t)

		stdout, stderr, code := b.cli(t, "migrate")
		require.Equal(t, 0, code, "migrate: %s", stderr)
		t.Logf("migrate: %s", strings.TrimSpace(stdout))
		srv = b.serve(t, "--allow-private-urls", "127.0.0.1/32")
		require.Eventually(t, func() bool {
			var s []string
			require.NoError(t, db.Bun().NewRaw("SELECT status FROM cron_executions WHERE job_id = ?", jobID).Scan(ctx, &s))
			status = strings.Join(s, ",")
			return status == "success"
		}, 2*chWait, chTick, "this release made the retry (execution %s)", status)
		var e upgradeExecution
		require.NoError(t, db.Bun().NewRaw("SELECT job_id, slot, status, attempt, interrupted_attempts, COALESCE(error, '') AS error FROM cron_executions WHERE job_id = ?", jobID).Scan(ctx, &e))
		require.Equal(t, 2, e.Attempt)
		mu.Lock()
		require.Equal(t, map[string]int{cron.IdempotencyKey(jobID, time.UnixMicro(e.Slot)): 2}, calls, "the first call and its retry, with one key")
		mu.Unlock()
		require.Contains(t, srv.stderr.String(), "cron: runs of an older release adopted")
		srv.stop(t)
	})
}

// upgradeRig is one rolling upgrade: a Postgres database migrated by the
// previous release, three replicas behind a balancer, a fake WhatsApp
// Cloud API, a webhook receiver and a cron endpoint, and the load.
type upgradeRig struct {
	b        *testBundle // this build on the database
	old      *testBundle // the previous release on the database
	serveURL string      // the database URL the replicas use
	proxy    *faultproxy.Proxy
	args     []string // serve flags of both builds

	acct     createdAccount
	provider *recordingAPI
	hooks    *deliveryLog
	crons    *cronReceiver
	lb       *balancer
	load     *upgradeLoad
	db       *store.DB

	replicas   []*serverProc
	kills      []time.Time
	restarts   []time.Time          // when the database restarted
	cronJobs   map[string]time.Time // each job's own second
	stopLoad   func()
	killsAllow bool
	began      time.Time
}

func newUpgradeRig(t *testing.T, faults bool) *upgradeRig {
	t.Helper()
	prev := previousRelease(t)
	b := setupEmpty(t, store.Postgres)
	rig := &upgradeRig{began: time.Now(), b: b, old: b.withBinary(prev), serveURL: b.dbURL, killsAllow: faults,
		args: []string{"--allow-private-urls", "127.0.0.1/32", "--rate-limit", "0", "--job-workers", "8",
			// One account: its jobs may take every worker.
			"--job-account-share", "1",
			// A key held by a request that died with its replica is
			// taken over soon.
			"--idempotency-lock", "3s"}}
	if faults {
		u, err := url.Parse(b.dbURL)
		require.NoError(t, err)
		rig.proxy = faultproxy.Start(t, u.Host)
		rig.serveURL = rig.proxy.URL(b.dbURL)
	}
	_, stderr, code := rig.old.cli(t, "migrate")
	require.Equal(t, 0, code, "the previous release migrates an empty database: %s", stderr)

	wa := whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)
	rig.provider = newRecordingAPI(t, wa.URL, 20*time.Millisecond)
	rig.hooks = newDeliveryLog(t)
	rig.crons = newCronReceiver(t)
	rig.acct = rig.old.createAccount(t, "Upgrade")
	var num numberOut
	rig.old.cliJSON(t, &num, "numbers", "add", "--account", rig.acct.AccountID, "--number", chWAAgent,
		"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
		"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", rig.provider.URL)
	var hook webhookOut
	rig.old.cliJSON(t, &hook, "webhook", "set", "--account", rig.acct.AccountID, "--url", rig.hooks.URL, "--allow-private-urls", "127.0.0.1/32")

	rig.lb = newBalancer(t)
	rig.replicas = make([]*serverProc, 3)
	for i := range rig.replicas {
		rig.replicas[i] = rig.serve(t, rig.old)
		rig.lb.add(rig.replicas[i])
	}
	headers := auth(rig.acct.APIKey, rig.acct.APISecret)
	rig.load = &upgradeLoad{base: rig.lb.URL, account: rig.acct.AccountID, headers: headers, allowKills: faults,
		client: &http.Client{Timeout: 30 * time.Second}, statuses: map[string]int{}}

	// The users write first: a business answers within a day of it. The
	// sends go to them in turn, each user's thread with its own order of
	// webhook deliveries.
	for i := range upgradeUsers {
		inbound := whatsappfake.TextMessage(chWAPNID, chWADisplay, upgradeUser(i)[1:], "Sheena Nelson", fmt.Sprintf("wamid.upgrade-inbound-%d", i), "hello")
		status, _, body := rig.load.do(http.MethodPost, "/v1/providers/whatsapp/"+num.NumberID+"/webhook", "", inbound,
			"X-Hub-Signature-256", whatsappfake.Sign(inbound, chWASecret))
		require.Equal(t, http.StatusOK, status, "inbound: %s", body)
	}

	// Cron jobs every minute, each first due at a second of its own
	// (set in the database: schedules have minutes), so that a slot
	// falls in every second of the roll.
	rig.cronJobs = map[string]time.Time{}
	ids := make([]string, upgradeCronJobs)
	for i := range ids {
		job, _ := json.Marshal(map[string]any{"endpoint_url": rig.crons.URL + "/tick", "frequency": "custom",
			"custom_schedule": "* * * * *", "timezone": "UTC", "method": "POST", "body": map[string]any{"job": i}})
		status, _, body := rig.load.do(http.MethodPost, "/v1/cron-jobs", "", job, append(headers, "Content-Type", "application/json")...)
		require.Equal(t, http.StatusCreated, status, "create cron job: %s", body)
		var created struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(body, &created))
		ids[i] = created.ID
	}
	db, err := store.Open(context.Background(), b.dbURL, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	rig.db = db
	first := time.Now().Truncate(time.Second).Add(3 * time.Second)
	for i, id := range ids {
		at := first.Add(time.Duration(i) * time.Second)
		rig.cronJobs[id] = at
		_, err := db.Bun().NewRaw("UPDATE cron_jobs SET next_run_at = ? WHERE id = ?", at.UnixMicro(), id).Exec(context.Background())
		require.NoError(t, err)
	}
	return rig
}

// serve starts a replica of bundle's build on the rig's database and
// waits until it is ready.
func (rig *upgradeRig) serve(t *testing.T, bundle *testBundle) *serverProc {
	t.Helper()
	p := launchBinary(t, bundle.executable(), bundle.env, append([]string{"--database-url", rig.serveURL}, rig.args...)...)
	p.waitListening(t)
	p.waitReady(t)
	return p
}

// start starts the load and lets the previous release serve it.
func (rig *upgradeRig) start(t *testing.T) {
	t.Helper()
	t.Logf("set up in %s", time.Since(rig.began).Round(100*time.Millisecond))
	rig.began = time.Now()
	rig.stopLoad = rig.load.start(2)
	time.Sleep(upgradeStep)
}

// migrate runs this build's `switchboard migrate` under the serving
// previous release, which then serves on the new schema for a while.
func (rig *upgradeRig) migrate(t *testing.T) {
	t.Helper()
	stdout, stderr, code := rig.b.cli(t, "migrate")
	require.Equal(t, 0, code, "migrate: %s", stderr)
	t.Logf("migrate under the previous release: %s", strings.TrimSpace(stdout))
	time.Sleep(upgradeStep)
}

// replace takes replica i out of the balancer and stops it (SIGTERM once
// its requests are answered, or SIGKILL at once when kill), then starts
// a replica of this build in its place.
func (rig *upgradeRig) replace(t *testing.T, i int, kill bool) {
	t.Helper()
	if kill {
		rig.kill(t, i)
	} else {
		rig.lb.drain(rig.replicas[i])
		rig.replicas[i].stop(t)
	}
	rig.replicas[i] = rig.serve(t, rig.b)
	rig.lb.add(rig.replicas[i])
}

// kill takes replica i out of the balancer and kills it with SIGKILL at
// once, requests in flight and all.
func (rig *upgradeRig) kill(t *testing.T, i int) {
	t.Helper()
	rig.lb.kill(rig.replicas[i])
	rig.replicas[i].signal(t, syscall.SIGKILL)
	rig.replicas[i].waitExit(t, exitTimeout)
	rig.kills = append(rig.kills, time.Now())
}

// finish stops the load, waits for the work it made to be done, checks
// every promise and stops the replicas.
func (rig *upgradeRig) finish(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rig.stopLoad()
	stopped := time.Now()
	t.Logf("rolled in %s", stopped.Sub(rig.began).Round(100*time.Millisecond))
	sends := rig.load.accepted()
	statuses, problems := rig.load.report()
	t.Logf("answers through the roll: %v", statuses)
	require.Empty(t, problems, "every request is answered 2xx or 503 with Retry-After")
	require.NotEmpty(t, sends)

	// The work accepted is done: sends delivered, webhook deliveries
	// made, every cron slot up to now called.
	lastOwnSlot := time.Time{}
	for _, at := range rig.cronJobs {
		if at.After(lastOwnSlot) {
			lastOwnSlot = at
		}
	}
	var execs []upgradeExecution
	var until time.Time
	deadline := stopped.Add(upgradeSettle)
	for {
		var pending struct {
			Deliveries int `bun:"deliveries"`
			Queued     int `bun:"queued"`
		}
		require.NoError(t, rig.db.Bun().NewRaw(`SELECT (SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded') AS deliveries,
			(SELECT count(*) FROM messages WHERE status = 'queued') AS queued`).Scan(ctx, &pending))
		until = time.Now().Add(-3 * time.Second)
		execs = rig.executions(t)
		missing := rig.missingSlots(execs, until)
		running := unsettled(execs, until)
		if pending.Deliveries == 0 && pending.Queued == 0 && len(missing) == 0 && len(running) == 0 && until.After(lastOwnSlot) {
			break
		}
		if time.Now().After(deadline) {
			rig.logBacklog(t)
			t.Fatalf("the work accepted during the roll is not done %s after the load stopped: %d deliveries pending, %d sends queued, cron slots never run: %v, runs not ended: %v",
				upgradeSettle, pending.Deliveries, pending.Queued, missing, running)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("work done %s after the load stopped", time.Since(stopped).Round(100*time.Millisecond))

	rig.checkSends(t, sends)
	rig.checkDeliveries(t, sends)
	rig.checkCron(t, execs, until)
	for _, srv := range rig.replicas {
		srv.stop(t)
	}
}

// logBacklog logs the jobs by kind and state, and the pending webhook
// deliveries with their jobs, to tell why the work is not done.
func (rig *upgradeRig) logBacklog(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var states []struct {
		Kind  string `bun:"kind"`
		State string `bun:"state"`
		N     int    `bun:"n"`
	}
	require.NoError(t, rig.db.Bun().NewRaw(`SELECT kind, state, count(*) AS n FROM jobs GROUP BY kind, state ORDER BY kind, state`).Scan(ctx, &states))
	t.Logf("jobs: %+v", states)
	var pending []struct {
		ID       string `bun:"id"`
		Seq      int64  `bun:"seq"`
		Thread   string `bun:"thread_id"`
		Attempts int    `bun:"attempts"`
		State    string `bun:"state"`
		Attempt  int    `bun:"attempt"`
		Owner    string `bun:"owner"`
		DueInMs  int64  `bun:"due_in_ms"`
		LastErr  string `bun:"last_error"`
	}
	require.NoError(t, rig.db.Bun().NewRaw(`SELECT d.id, d.seq, d.thread_id, d.attempts, COALESCE(j.state, '') AS state,
		COALESCE(j.attempt, 0) AS attempt, COALESCE(j.lease_owner, '') AS owner, COALESCE(j.last_error, '') AS last_error,
		(COALESCE(j.run_at, 0) - (extract(epoch FROM now()) * 1000000)::bigint) / 1000 AS due_in_ms
		FROM webhook_deliveries d LEFT JOIN jobs j ON j.kind = 'webhook.deliver' AND convert_from(j.payload, 'UTF8') LIKE '%' || d.id || '%'
		WHERE d.status <> 'succeeded' ORDER BY d.seq LIMIT 30`).Scan(ctx, &pending))
	t.Logf("webhook deliveries pending (oldest 30): %+v", pending)
}

// repeatsFromKills checks the arrivals of one piece of work (in order)
// against the documented at-least-once case, as the crash test does for
// sends: each arrival but the last was on the wire when a replica died,
// shortly before the first kill after it, and the next arrival came after
// that kill. (A replica of the previous release holds its work until the
// lease ends, so the work can be cut off at one kill, taken up by another
// replica that is killed in turn, and arrive a third time.) It returns ""
// or what breaks the rule.
func (rig *upgradeRig) repeatsFromKills(at []time.Time) string {
	for i := 0; i+1 < len(at); i++ {
		k := killAfter(rig.kills, at[i])
		if k == len(rig.kills) || rig.kills[k].Sub(at[i]) > crashInFlight || !at[i+1].After(rig.kills[k]) {
			return fmt.Sprintf("arrival %d of %d (%s) was not in flight at a kill before the next one %v",
				i+1, len(at), at[i].Format(time.StampMilli), rig.kills)
		}
	}
	return ""
}

// checkSends: every accepted key left one message, which reached the
// provider once (once more for each copy in flight at a kill, see
// repeatsFromKills), and none failed.
func (rig *upgradeRig) checkSends(t *testing.T, sends []upgradeSend) {
	t.Helper()
	var rows []struct {
		ID     string `bun:"id"`
		Status string `bun:"status"`
	}
	require.NoError(t, rig.db.Bun().NewRaw(`SELECT id, status FROM messages WHERE direction <> 'inbound'`).Scan(context.Background(), &rows))
	stored := map[string]string{}
	for _, r := range rows {
		stored[r.ID] = r.Status
	}
	require.Len(t, stored, len(sends), "one message per accepted send, none made by a retry")
	arrivals := rig.provider.arrivals()
	again := 0
	for _, s := range sends {
		require.Contains(t, stored, s.messageID, "the send %s (%q) is stored", s.key, s.text)
		require.NotEqual(t, "failed", stored[s.messageID], "the provider took %q", s.text)
		at := arrivals[s.text]
		require.NotEmpty(t, at, "the send %q reached the provider", s.text)
		if len(at) > 1 {
			again++
			require.Empty(t, rig.repeatsFromKills(at), "%q reached the provider %d times", s.text, len(at))
		}
	}
	t.Logf("%d sends accepted, each stored once; %d reached the provider again (in flight at a kill)", len(sends), again)
}

// checkDeliveries: every webhook delivery succeeded and reached the
// receiver once per counted attempt (once more for each attempt a kill
// cut off, see repeatsFromKills), each accepted send's message.sent among
// them.
func (rig *upgradeRig) checkDeliveries(t *testing.T, sends []upgradeSend) {
	t.Helper()
	var rows []struct {
		ID          string `bun:"id"`
		Attempts    int    `bun:"attempts"`
		Interrupted int    `bun:"interrupted"`
	}
	require.NoError(t, rig.db.Bun().NewRaw(`SELECT d.id, d.attempts,
		(SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.interrupted) AS interrupted
		FROM webhook_deliveries d`).Scan(context.Background(), &rows))
	arrivals, sent := rig.hooks.snapshot()
	again := 0
	for _, d := range rows {
		at := arrivals[d.ID]
		require.NotEmpty(t, at, "the delivery %s reached the receiver", d.ID)
		if len(at) == 1 && d.Attempts == 1 {
			continue
		}
		again++
		require.True(t, rig.killsAllow, "delivery %s: %d attempts, %d requests, with no replica killed", d.ID, d.Attempts, len(at))
		require.Empty(t, rig.repeatsFromKills(at), "delivery %s reached the receiver %d times", d.ID, len(at))
		// This build logs an attempt its replica's death cut off as
		// interrupted; the previous release, whose processes do not
		// register, leaves it to the lease and unlogged.
		logged := d.Attempts + d.Interrupted
		require.True(t, logged >= 1 && len(at) >= logged,
			"delivery %s: %d requests, %d attempts and %d interrupted logged", d.ID, len(at), d.Attempts, d.Interrupted)
	}
	for id := range arrivals {
		require.True(t, containsDelivery(rows, id), "the receiver got %s, a delivery the database does not know", id)
	}
	for _, s := range sends {
		require.Equal(t, 1, sent[s.messageID], "the message.sent event of %s (%q) was delivered once", s.messageID, s.text)
	}
	t.Logf("%d webhook deliveries, each arrived; %d arrived again (in flight at a kill)", len(rows), again)
}

func containsDelivery(rows []struct {
	ID          string `bun:"id"`
	Attempts    int    `bun:"attempts"`
	Interrupted int    `bun:"interrupted"`
}, id string) bool {
	for _, r := range rows {
		if r.ID == id {
			return true
		}
	}
	return false
}

// upgradeExecution is a cron execution as stored.
type upgradeExecution struct {
	JobID       string `bun:"job_id"`
	Slot        int64  `bun:"slot"`
	Status      string `bun:"status"`
	Attempt     int    `bun:"attempt"`
	Interrupted int    `bun:"interrupted_attempts"`
	Error       string `bun:"error"`
	// StartedAt is when the run was made (enqueued, or claimed by the
	// previous release), in unix microseconds.
	StartedAt int64 `bun:"started_at"`
}

func (rig *upgradeRig) executions(t *testing.T) []upgradeExecution {
	t.Helper()
	var execs []upgradeExecution
	require.NoError(t, rig.db.Bun().NewRaw(`SELECT job_id, slot, status, attempt, interrupted_attempts, COALESCE(error, '') AS error, started_at
		FROM cron_executions ORDER BY slot`).Scan(context.Background(), &execs))
	return execs
}

// missingSlots lists the slots up to until that have no execution: each
// job's own second, and every minute after it. A slot missed in the
// database's restart is not listed when the job's next slot shows the
// documented catch-up (docs/cron.md, missed runs after downtime): the
// database went away at most a lookahead before the slot, and the next
// slot's run was made only once that slot had come, so the job was found
// late and ran once, for its latest missed slot. (A job whose own second
// is :59 has its next slot one second later.)
func (rig *upgradeRig) missingSlots(execs []upgradeExecution, until time.Time) []string {
	made := map[string]upgradeExecution{}
	for _, e := range execs {
		made[slotKey(e.JobID, time.UnixMicro(e.Slot))] = e
	}
	var missing []string
	for id, own := range rig.cronJobs {
		for slot := own; !slot.After(until); slot = nextMinute(slot) {
			if _, ok := made[slotKey(id, slot)]; ok {
				continue
			}
			next := nextMinute(slot)
			if late, ok := made[slotKey(id, next)]; ok && late.StartedAt >= next.UnixMicro() && rig.restartedAround(slot, next) {
				continue
			}
			missing = append(missing, id+" at "+slot.Format(time.TimeOnly))
		}
	}
	sort.Strings(missing)
	return missing
}

// slotKey names a cron job's slot.
func slotKey(jobID string, slot time.Time) string {
	return jobID + "@" + strconv.FormatInt(slot.UnixMicro(), 10)
}

// nextMinute is the slot after slot of a job that runs every minute.
func nextMinute(slot time.Time) time.Time { return slot.Truncate(time.Minute).Add(time.Minute) }

// restartedAround says whether the database restarted between a
// lookahead (with a second of slack) before slot and next: a run of slot
// not yet committed then was lost with the restart's transactions, and
// the schedulers could make none until it was back.
func (rig *upgradeRig) restartedAround(slot, next time.Time) bool {
	for _, r := range rig.restarts {
		if !r.Before(slot.Add(-appcron.DefaultLookahead-time.Second)) && !r.After(next) {
			return true
		}
	}
	return false
}

// unsettled lists the executions of slots up to until that have not
// ended.
func unsettled(execs []upgradeExecution, until time.Time) []string {
	var out []string
	for _, e := range execs {
		if e.Slot <= until.UnixMicro() && (e.Status == "running" || e.Status == "retrying") {
			out = append(out, fmt.Sprintf("%s at %s: %s, attempt %d", e.JobID, time.UnixMicro(e.Slot).UTC().Format(time.TimeOnly), e.Status, e.Attempt))
		}
	}
	return out
}

// checkCron: every slot up to until ran and succeeded, called once
// (twice only when the first call was cut off by a kill and made again
// with the same Idempotency-Key, as its execution says).
func (rig *upgradeRig) checkCron(t *testing.T, execs []upgradeExecution, until time.Time) {
	t.Helper()
	calls := rig.crons.snapshot()
	seen := map[string]bool{}
	retried := 0
	for _, e := range execs {
		if e.Slot > until.UnixMicro() {
			continue // a slot after the checks began
		}
		key := cron.IdempotencyKey(e.JobID, time.UnixMicro(e.Slot))
		seen[key] = true
		require.Equal(t, "success", e.Status, "cron run %s: %s", key, e.Error)
		n := calls[key]
		if n == 1 && e.Attempt == 1 {
			continue
		}
		// A call cut off by a kill (its start committed, its outcome
		// not) is made again with the same key, as attempt 2, with one
		// interrupted attempt; the cut-off call may or may not have
		// reached the endpoint.
		retried++
		require.True(t, rig.killsAllow, "cron run %s: %d calls, attempt %d, with no replica killed", key, n, e.Attempt)
		require.True(t, n == 1 || n == 2, "cron run %s: %d calls", key, n)
		require.Equal(t, 2, e.Attempt, "cron run %s: attempts", key)
		require.Equal(t, 1, e.Interrupted, "cron run %s was made again because a kill cut off its first call", key)
	}
	for key := range calls {
		_, stamp, _ := strings.Cut(key, ":")
		slot, err := time.Parse("20060102T150405Z", stamp)
		require.NoError(t, err, "Idempotency-Key %q", key)
		require.True(t, seen[key] || slot.After(until), "the endpoint got %s, a run with no execution", key)
	}
	t.Logf("%d cron runs, each called once; %d called again after a kill cut off their call", len(execs), retried)
}

// upgradeSend is one accepted send.
type upgradeSend struct {
	key, text, messageID string
}

// upgradeLoad is the traffic of the roll through the balancer: senders
// that give each message an Idempotency-Key and retry it until it is
// accepted, and a reader. It tallies every answer and keeps those that
// break the contract.
type upgradeLoad struct {
	base       string
	account    string
	headers    []string
	client     *http.Client
	allowKills bool

	mu       sync.Mutex
	statuses map[string]int
	problems []string
	sends    []upgradeSend
}

// do makes one request through the balancer; status 0 when no answer
// came.
func (l *upgradeLoad) do(method, path, key string, body []byte, headers ...string) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, l.base+path, bytes.NewReader(body))
	if err != nil {
		l.problem("%s %s: %v", method, path, err)
		return 0, nil, nil
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := l.client.Do(req)
	if err != nil {
		l.problem("%s %s: no answer: %v", method, path, err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		l.problem("%s %s: answer cut off: %v", method, path, err)
		return 0, nil, nil
	}
	return resp.StatusCode, resp.Header, b
}

// retryable says whether an answer asks for the same request again, and
// records any answer the contract does not allow.
func (l *upgradeLoad) retryable(family string, status int, h http.Header, body []byte) bool {
	l.mu.Lock()
	l.statuses[fmt.Sprintf("%s %d", family, status)]++
	l.mu.Unlock()
	switch {
	case status >= 200 && status < 300:
		return false
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") != "":
		return true
	case status == http.StatusBadGateway && h.Get("X-Balancer-Killed") != "" && l.allowKills:
		// In flight at a replica killed under it: no answer came.
		return true
	case status == http.StatusConflict && h.Get("Retry-After") != "" && bytes.Contains(body, []byte("idempotency_key_in_use")) && l.allowKills:
		// The retry of a request that died with its replica, whose key
		// it still holds.
		return true
	case status == 0:
		return false // do recorded it
	}
	l.problem("%s: %d %s", family, status, body)
	return false
}

func (l *upgradeLoad) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// start runs senders and a reader until the returned stop is called;
// stop returns once every send begun is accepted or given up.
func (l *upgradeLoad) start(senders int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var n atomic.Int64
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case <-time.After(upgradeSendEvery):
				}
				i := n.Add(1)
				l.send(fmt.Sprintf("upgrade-%d-%d", w, i), upgradeUser(int(i)%upgradeUsers), fmt.Sprintf("upgrade send %d", i))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		paths := []string{"/v1/accounts/" + l.account, "/v1/cron-jobs?limit=5"}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			path := paths[i%len(paths)]
			status, h, body := l.do(http.MethodGet, path, "", nil, l.headers...)
			l.retryable("GET "+strings.SplitN(path, "?", 2)[0], status, h, body)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// send posts one message to the user with key until it is accepted (or for a minute).
func (l *upgradeLoad) send(key, to, text string) {
	body, _ := json.Marshal(map[string]any{"service": "whatsapp", "from": chWAAgent, "to": to, "content": text})
	headers := append([]string{"Content-Type", "application/json"}, l.headers...)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		status, h, answer := l.do(http.MethodPost, "/v1/messages/individual/"+l.account+"/send", key, body, headers...)
		if !l.retryable("send", status, h, answer) {
			if status == http.StatusOK {
				var sent struct {
					MessageID string `json:"message_id"`
				}
				if err := json.Unmarshal(answer, &sent); err != nil || sent.MessageID == "" {
					l.problem("send %s: answer without message_id: %s", key, answer)
					return
				}
				l.mu.Lock()
				l.sends = append(l.sends, upgradeSend{key: key, text: text, messageID: sent.MessageID})
				l.mu.Unlock()
			}
			return
		}
		wait := 200 * time.Millisecond
		if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
			wait = min(time.Duration(s)*time.Second, time.Second)
		}
		time.Sleep(wait)
	}
	l.problem("send %s: never accepted", key)
}

func (l *upgradeLoad) accepted() []upgradeSend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]upgradeSend(nil), l.sends...)
}

func (l *upgradeLoad) report() (map[string]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses, append([]string(nil), l.problems...)
}

// balancer is the load balancer of the roll: round robin over the
// replicas in rotation. A replica is taken out before it is stopped and
// stopped once its requests are answered, as a load balancer drains a
// backend. A request that fails at its replica is answered 502 (the
// test counts it), with X-Balancer-Killed when that replica was killed
// under it.
type balancer struct {
	URL string

	mu       sync.Mutex
	pool     []*backend
	backends map[*serverProc]*backend
	next     int
}

type backend struct {
	proxy    *httputil.ReverseProxy
	inflight sync.WaitGroup
	killed   atomic.Bool
}

func newBalancer(t *testing.T) *balancer {
	t.Helper()
	lb := &balancer{backends: map[*serverProc]*backend{}}
	srv := httptest.NewServer(lb)
	t.Cleanup(srv.Close)
	lb.URL = srv.URL
	return lb
}

func (lb *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lb.mu.Lock()
	if len(lb.pool) == 0 {
		lb.mu.Unlock()
		http.Error(w, "no replica in rotation", http.StatusBadGateway)
		return
	}
	b := lb.pool[lb.next%len(lb.pool)]
	lb.next++
	b.inflight.Add(1)
	lb.mu.Unlock()
	defer b.inflight.Done()
	b.proxy.ServeHTTP(w, r)
}

// add puts a replica in rotation.
func (lb *balancer) add(p *serverProc) {
	target, err := url.Parse(p.URL)
	if err != nil {
		panic(err)
	}
	b := &backend{proxy: httputil.NewSingleHostReverseProxy(target)}
	b.proxy.Transport = &http.Transport{}
	b.proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if b.killed.Load() {
			w.Header().Set("X-Balancer-Killed", "1")
		}
		http.Error(w, "replica failed: "+err.Error(), http.StatusBadGateway)
	}
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.backends[p] = b
	lb.pool = append(lb.pool, b)
}

// take takes a replica out of rotation.
func (lb *balancer) take(p *serverProc) *backend {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	b := lb.backends[p]
	delete(lb.backends, p)
	for i, x := range lb.pool {
		if x == b {
			lb.pool = append(lb.pool[:i], lb.pool[i+1:]...)
			break
		}
	}
	return b
}

// drain takes a replica out of rotation and waits for its requests.
func (lb *balancer) drain(p *serverProc) {
	b := lb.take(p)
	b.inflight.Wait()
	b.proxy.Transport.(*http.Transport).CloseIdleConnections()
}

// kill takes a replica out of rotation about to be killed: its requests
// in flight will fail.
func (lb *balancer) kill(p *serverProc) {
	lb.take(p).killed.Store(true)
}

// deliveryLog is the account's webhook endpoint: it answers 200 at once
// and records when each delivery (webhook-id) arrived, and how many
// message.sent events came per message.
type deliveryLog struct {
	URL string

	mu       sync.Mutex
	arrivals map[string][]time.Time
	sent     map[string]map[string]bool // message id → delivery ids
}

func newDeliveryLog(t *testing.T) *deliveryLog {
	t.Helper()
	h := &deliveryLog{arrivals: map[string][]time.Time{}, sent: map[string]map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var event struct {
			Event     string `json:"event"`
			MessageID string `json:"message_id"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &event)
		id := r.Header.Get("webhook-id")
		h.mu.Lock()
		h.arrivals[id] = append(h.arrivals[id], at)
		if event.Event == "message.sent" {
			if h.sent[event.MessageID] == nil {
				h.sent[event.MessageID] = map[string]bool{}
			}
			h.sent[event.MessageID][id] = true
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hooks"
	return h
}

// snapshot is the arrivals per delivery and the number of deliveries
// carrying each message's message.sent.
func (h *deliveryLog) snapshot() (map[string][]time.Time, map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	arrivals := make(map[string][]time.Time, len(h.arrivals))
	for id, at := range h.arrivals {
		arrivals[id] = append([]time.Time(nil), at...)
	}
	sent := make(map[string]int, len(h.sent))
	for m, ids := range h.sent {
		sent[m] = len(ids)
	}
	return arrivals, sent
}

// cronReceiver is the cron jobs' endpoint: it answers 200 and counts the
// calls per Idempotency-Key (job id and slot).
type cronReceiver struct {
	URL string

	mu    sync.Mutex
	calls map[string]int
}

func newCronReceiver(t *testing.T) *cronReceiver {
	t.Helper()
	c := &cronReceiver{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.calls[r.Header.Get("Idempotency-Key")]++
		c.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *cronReceiver) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, n := range c.calls {
		out[k] = n
	}
	return out
}
