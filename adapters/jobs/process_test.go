package jobs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// TestMain doubles as a queue worker process: the tests below start this
// test binary again with SWB_QUEUE_WORKER set, so that several real
// processes share one database and one of them can be killed.
func TestMain(m *testing.M) {
	if os.Getenv("SWB_QUEUE_WORKER") != "" {
		os.Exit(workerProcess())
	}
	os.Exit(m.Run())
}

// workerProcess runs a runner until SIGTERM. Its handler appends each job
// id to the file SWB_QUEUE_RUNS with one write per job, so the record
// survives a SIGKILL, then sleeps SWB_QUEUE_SLEEP to keep jobs in flight.
func workerProcess() int {
	ctx := context.Background()
	db, err := store.Open(ctx, os.Getenv("SWB_QUEUE_DB"), store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	runs, err := os.OpenFile(os.Getenv("SWB_QUEUE_RUNS"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer runs.Close()
	pause, _ := time.ParseDuration(os.Getenv("SWB_QUEUE_SLEEP"))
	cfg := runner.Config{
		Workers: 4, ClaimBatch: 20, PollInterval: 50 * time.Millisecond,
		RescueInterval: 100 * time.Millisecond, Lease: 1500 * time.Millisecond, MaxPaceWait: 100 * time.Millisecond,
	}
	if lease := os.Getenv("SWB_QUEUE_LEASE"); lease != "" {
		cfg.Lease, _ = time.ParseDuration(lease)
	}
	if os.Getenv("SWB_QUEUE_REGISTER") != "" {
		// As a server does: the leases carry the process's registered id.
		p, err := db.RegisterProcess(ctx, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer p.Close(ctx)
		cfg.WorkerID, cfg.Liveness = p.ID(), p
	}
	r, err := runner.New(db.JobQueue(), db, cfg, runner.Kind{Name: "proc", Timeout: time.Second, Handler: runner.HandlerFunc(func(ctx context.Context, job jobs.Job) error {
		if _, err := runs.WriteString(strconv.FormatInt(job.ID, 10) + "\n"); err != nil {
			return err
		}
		time.Sleep(pause)
		return nil
	})})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	if err := r.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	<-sig
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Stop(stopCtx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type workerProc struct {
	cmd  *exec.Cmd
	runs string
}

func startWorker(t *testing.T, dbURL, runsFile string, pause time.Duration, env ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SWB_QUEUE_WORKER=1", "SWB_QUEUE_DB="+dbURL, "SWB_QUEUE_RUNS="+runsFile, "SWB_QUEUE_SLEEP="+pause.String())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &workerProc{cmd: cmd, runs: runsFile}
}

func (w *workerProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w.cmd.Wait(), "a worker stops cleanly on SIGTERM")
}

// readRuns counts runs per job id across the workers' files.
func readRuns(t *testing.T, files ...string) map[int64]int {
	t.Helper()
	runs := map[int64]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			id, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
			require.NoError(t, err)
			runs[id]++
		}
		fh.Close()
	}
	return runs
}

func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

func enqueueMany(t *testing.T, db *store.DB, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for len(ids) < n {
		require.NoError(t, db.Transact(context.Background(), func(ctx context.Context, c *store.Conn) error {
			r := store.JobQueue{Conn: c}
			for i := 0; i < 500 && len(ids) < n; i++ {
				id, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "proc"})
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		}))
	}
	return ids
}

// queueOf is a fresh database of dialect with total jobs of kind "proc"
// queued: its URL for worker processes, the test's handle on it, the ids.
func queueOf(t *testing.T, dialect store.Dialect, total int) (string, *store.DB, []int64) {
	t.Helper()
	url := dbtest.URL(t, dialect)
	db, err := store.Open(context.Background(), url, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return url, db, enqueueMany(t, db, total)
}

func completed(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE state = 'completed'").Scan(context.Background(), &n))
	return n
}

// Three worker processes on one Postgres database: each of 1,500 jobs runs
// exactly once when nothing crashes.
func TestThreeProcessesRunEachJobOnce(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, store.Postgres)
	db, err := store.Open(context.Background(), url, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	const total = 1500
	ids := enqueueMany(t, db, total)
	dir := t.TempDir()
	var workers []*workerProc
	for i := 0; i < 3; i++ {
		workers = append(workers, startWorker(t, url, filepath.Join(dir, fmt.Sprintf("runs-%d", i)), 0))
	}
	require.Eventually(t, func() bool { return completed(t, db) == total }, 120*time.Second, 50*time.Millisecond)
	var files []string
	for _, w := range workers {
		w.stop(t)
		files = append(files, w.runs)
		require.Positive(t, lines(w.runs), "every process took part")
	}
	runs := readRuns(t, files...)
	require.Len(t, runs, total)
	for _, id := range ids {
		require.Equal(t, 1, runs[id], "job %d", id)
	}
}

// A worker killed with SIGKILL mid-batch loses no job: its leases expire
// and another process runs them. Jobs in flight at the kill may run twice.
func TestKilledWorkerLosesNoJob(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		const total = 800
		url, db, ids := queueOf(t, dialect, total)
		dir := t.TempDir()

		victim := startWorker(t, url, filepath.Join(dir, "victim"), 2*time.Millisecond)
		require.Eventually(t, func() bool { return lines(victim.runs) >= 200 }, 60*time.Second, 5*time.Millisecond)
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
		_ = victim.cmd.Wait()
		require.Less(t, completed(t, db), total, "the kill happened mid-queue")

		survivor := startWorker(t, url, filepath.Join(dir, "survivor"), 0)
		require.Eventually(t, func() bool { return completed(t, db) == total }, 120*time.Second, 50*time.Millisecond)
		survivor.stop(t)

		runs := readRuns(t, victim.runs, survivor.runs)
		twice := 0
		for _, id := range ids {
			require.GreaterOrEqual(t, runs[id], 1, "job %d was lost", id)
			if runs[id] > 1 {
				twice++
			}
		}
		// At most what the victim had in flight or had finished without its
		// completion batch being written.
		require.LessOrEqual(t, twice, 4+500)
		t.Logf("%s: %d of %d jobs ran twice after the kill", dialect, twice, total)
	})
}

// A registered worker process killed with SIGKILL while its jobs run has
// them run again by another process at once, not after their leases (an
// hour here): the database shows the death. The cut-off runs used no
// attempt: every job completes at its first counted attempt.
func TestKilledRegisteredWorkerJobsRunAgainAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		const total = 8
		url, db, ids := queueOf(t, dialect, total)
		dir := t.TempDir()
		registered := []string{"SWB_QUEUE_REGISTER=1", "SWB_QUEUE_LEASE=1h"}

		// The victim's four workers each hold a job that runs for a minute.
		victim := startWorker(t, url, filepath.Join(dir, "victim"), time.Minute, registered...)
		require.Eventually(t, func() bool { return lines(victim.runs) >= 4 }, 60*time.Second, 5*time.Millisecond)
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
		_ = victim.cmd.Wait()
		require.Zero(t, completed(t, db))

		survivor := startWorker(t, url, filepath.Join(dir, "survivor"), 0, registered...)
		require.Eventually(t, func() bool { return completed(t, db) == total }, 60*time.Second, 20*time.Millisecond,
			"the dead process's jobs ran again long before their leases end")
		survivor.stop(t)

		runs := readRuns(t, victim.runs, survivor.runs)
		for _, id := range ids {
			require.GreaterOrEqual(t, runs[id], 1, "job %d was lost", id)
		}
		var attempts []int
		require.NoError(t, db.Bun().NewRaw("SELECT attempt FROM jobs ORDER BY id").Scan(context.Background(), &attempts))
		for i, a := range attempts {
			require.Equal(t, 1, a, "job %d: the run its process's death cut off is no attempt", ids[i])
		}
	})
}
