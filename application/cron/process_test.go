package cron_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// TestMain doubles as a replica process: TestExactlyOnceAcrossProcesses
// starts this test binary again with SWB_CRON_SCHEDULER set, so that
// three real processes share one database.
func TestMain(m *testing.M) {
	if os.Getenv("SWB_CRON_SCHEDULER") != "" {
		os.Exit(schedulerProcess())
	}
	os.Exit(m.Run())
}

// fastClock is simulated time shared by processes without talking: it
// runs speed times faster than real time from a common origin.
type fastClock struct {
	realStart time.Time
	simStart  time.Time
	speed     int64
}

func (c fastClock) Now() time.Time {
	return c.simStart.Add(time.Since(c.realStart) * time.Duration(c.speed))
}

// Real is when the simulated time sim comes, in real time.
func (c fastClock) Real(sim time.Time) time.Time {
	return c.realStart.Add(sim.Sub(c.simStart) / time.Duration(c.speed))
}

// slotOf is the slot of minute m of a test whose simulated time starts at
// simStart, half a minute before its first slot.
func slotOf(simStart time.Time, m int) time.Time {
	return simStart.Add(time.Duration(m)*time.Minute - 30*time.Second)
}

func (c fastClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d / time.Duration(c.speed))
	ch := make(chan time.Time, 1)
	go func() {
		<-t.C
		ch <- c.Now()
	}()
	return ch, func() {}
}

func clockFromEnv() (fastClock, error) {
	realNs, err1 := strconv.ParseInt(os.Getenv("SWB_CRON_REAL_START"), 10, 64)
	simNs, err2 := strconv.ParseInt(os.Getenv("SWB_CRON_SIM_START"), 10, 64)
	speed, err3 := strconv.ParseInt(os.Getenv("SWB_CRON_SPEED"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fastClock{}, fmt.Errorf("bad clock settings")
	}
	return fastClock{realStart: time.Unix(0, realNs), simStart: time.Unix(0, simNs).UTC(), speed: speed}, nil
}

// schedulerProcess runs a replica (enqueuer, handler, runner) on the
// simulated clock until SIGTERM.
func schedulerProcess() int {
	clock, err := clockFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, os.Getenv("SWB_CRON_DB"), store.Options{Now: clock.Now})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	// Durations are simulated time; the lease defaults to 3 s of real time.
	lease := 3 * time.Second * time.Duration(clock.speed)
	var lookahead, lead time.Duration
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"SWB_CRON_LEASE", &lease}, {"SWB_CRON_LOOKAHEAD", &lookahead}, {"SWB_CRON_LEAD", &lead}} {
		if env := os.Getenv(v.name); env != "" {
			if *v.dst, err = time.ParseDuration(env); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	// The runner's loops run on real time: a heartbeat every third of the
	// lease, a rescue every 100 ms, a poll every 20 ms. Claims of 10 runs
	// at most share them among the replicas.
	r, err := startReplica(replicaConfig{db: db, store: db.CronStore(), clock: clock, owner: os.Getenv("SWB_CRON_OWNER"), batch: 25, claimBatch: 10,
		lease: lease, lookahead: lookahead, lead: lead, beat: lease / 3 / time.Duration(clock.speed), rescue: 100 * time.Millisecond,
		poll: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	r.stop()
	return 0
}

// TestExactlyOnceAcrossProcesses: three scheduler processes on one
// Postgres database, 200 jobs every minute for 5 simulated minutes (time
// runs 20 times faster, from one origin every process computes): every
// slot is called once (again only after a recorded interruption), calls =
// execution rows = slots.
func TestExactlyOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	const jobs, minutes, speed = 200, 5, 20
	ctx := context.Background()
	url := dbtest.URL(t, store.Postgres)
	ep := newEndpoint(t)

	simStart := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	db, err := store.Open(ctx, url, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	acc := account.Account{ID: ident.New(ident.Account), Name: "Acme", CreatedAt: simStart, UpdatedAt: simStart}
	require.NoError(t, db.AccountStore().InsertAccount(ctx, acc))
	svc := appcron.NewService(appcron.Deps{
		Store: db.CronStore(), Parser: cronexpr.New(), URLs: loopback(),
		Now: func() time.Time { return simStart },
	})
	var jobIDs []string
	for range jobs {
		j, err := svc.Create(ctx, acc.ID, cron.Job{EndpointURL: ep.srv.URL + "/hook", Method: "POST",
			Spec: cron.Spec{Frequency: cron.Custom, Timezone: "UTC", CustomSchedule: "* * * * *"}}, nil)
		require.NoError(t, err)
		jobIDs = append(jobIDs, j.ID)
	}

	// Simulated time reaches simStart two seconds from now, once the
	// processes are up; the first slot (12:01) is 1.5 s of real time later.
	realStart := time.Now().Add(2 * time.Second)
	var procs []*exec.Cmd
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SWB_CRON_SCHEDULER=1", "SWB_CRON_DB="+url,
			fmt.Sprintf("SWB_CRON_REAL_START=%d", realStart.UnixNano()),
			fmt.Sprintf("SWB_CRON_SIM_START=%d", simStart.UnixNano()),
			fmt.Sprintf("SWB_CRON_SPEED=%d", speed))
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}
	defer stop()

	// Stop halfway between the last slot and the next, once the last
	// minute's calls are all recorded.
	clock := fastClock{realStart: realStart, simStart: simStart, speed: speed}
	end := simStart.Add(minutes * time.Minute)
	for clock.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		require.NoError(t, db.Bun().NewRaw("SELECT COUNT(*) FROM cron_executions WHERE status <> 'running'").Scan(ctx, &n))
		if n >= jobs*minutes || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()

	// The slots of the test's minutes. On a loaded machine the last
	// minute's records may come after the next slot (30 s of simulated
	// time, 1.5 s of real time): the processes, still running, call it,
	// and those calls are of slots the test did not wait for.
	lastSlot := slotOf(simStart, minutes)
	window := map[string]bool{}
	for _, id := range jobIDs {
		for m := 1; m <= minutes; m++ {
			window[cron.IdempotencyKey(id, slotOf(simStart, m))] = true
		}
	}
	keys := map[string]int{}
	calls := 0
	for _, c := range ep.snapshot() {
		if window[c.key] {
			keys[c.key]++
			calls++
		}
	}
	// A slot is called once, or, when a process stalled past its lease
	// (a loaded machine at 20 times the speed: 3 s of real time), once
	// more with the same Idempotency-Key after the takeover, recorded as
	// an interrupted attempt. A second call not recorded so fails.
	var rows, slots, success, interrupted int
	require.NoError(t, db.Bun().NewRaw("SELECT COUNT(*), COUNT(DISTINCT job_id || ':' || slot), COUNT(*) FILTER (WHERE status = 'success'), COALESCE(SUM(interrupted_attempts), 0) FROM cron_executions WHERE slot <= ?",
		lastSlot.UnixMicro()).Scan(ctx, &rows, &slots, &success, &interrupted))
	for k, n := range keys {
		require.LessOrEqual(t, n, 2, "slot %s called %d times", k, n)
	}
	require.Len(t, keys, jobs*minutes, "slots called")
	require.Equal(t, jobs*minutes+interrupted, calls, "calls: one per slot and one per interrupted attempt")
	if interrupted > 0 {
		t.Logf("%d slots were taken over after a stalled process and called again with their key", interrupted)
	}
	require.Equal(t, jobs*minutes, rows, "execution rows")
	require.Equal(t, jobs*minutes, slots, "distinct slots")
	require.Equal(t, jobs*minutes, success, "successful executions")
	var perJob []int
	require.NoError(t, db.Bun().NewRaw("SELECT COUNT(*) FROM cron_executions WHERE slot <= ? GROUP BY job_id", lastSlot.UnixMicro()).Scan(ctx, &perJob))
	require.Len(t, perJob, jobs)
	for _, n := range perJob {
		require.Equal(t, minutes, n, "every job ran once per minute: none missed")
	}
}
