package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Drain measures how fast the server's job runner empties a queue of jobs whose
// handler has nothing to do: the queue's own cost per job (claim, dispatch,
// recording the completion). The jobs are message deliveries (kind
// message.deliver) of messages that do not exist, which the handler answers with
// one batched primary-key lookup that finds nothing, as it does for a message
// deleted with its account; they carry no pace key, so no per-number pacing holds
// them, and no account unless Accounts says over how many they are spread (job i
// is account i mod Accounts's, so every account has due jobs). The server has no
// kind whose handler does less.
//
// Before each slice, untimed, completed jobs are deleted (retention pruning, which
// the server does a day later), the queue is topped up with SQL so the slice cannot
// run dry (see topUpTarget), and the table is analysed (see below). The slice then
// starts a server with Workers job workers (its runner claims up to as many jobs
// per statement) and a pool of MaxConns, waits Settle once it is ready, counts the
// completed jobs, waits the slice, counts again and stops the server. The
// operations are the jobs that moved to state completed between the two counts, and
// so completions recorded, not handler calls. A job the stopped server left
// running (claimed, its completion never recorded) is a failure, as is a job
// waiting for a retry or given up. The server runs only during its slices, never
// while the baseline runs.
//
// The slice's clock also covers a VACUUM of the table after the server stops: each
// job leaves two dead row versions (claimed, completed) and the claims slow down
// until they are vacuumed, so cleaning them up is part of sustaining the rate. A
// server with autovacuum does this in the background; the bench does it explicitly
// so that it neither depends on autovacuum (off on some test servers, which leaves
// the claim planned on stale statistics: a sort of every pending job per claim) nor
// lands in a baseline slice. The untimed ANALYZE before the slice stands in for
// autovacuum's.
type Drain struct {
	// Workers is the server's --job-workers.
	Workers int
	// MaxConns is the server's --db-max-conns: the runner's claims and completions.
	MaxConns int
	// MinPending is the least number of due jobs queued before each slice. The
	// top-up goes higher when the fastest slice so far suggests a slice could use
	// more than half of the queue (see topUpTarget).
	MinPending int
	// Settle is how long the runner runs after the server is ready and before the
	// slice is counted: the start-up's claims and connections are not timed.
	Settle time.Duration
	// Accounts spreads the jobs over this many accounts; 0 for none (jobs of no
	// account, which the claim's account shares do not bound).
	Accounts int
}

// Setup provisions the scenario's deployment and returns the drain slice.
func (d Drain) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	dep, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := dep.SQL()
	if err != nil {
		return nil, err
	}
	if err := warnAsyncCommit(ctx, env, db); err != nil {
		return nil, err
	}
	dr := &drainer{Drain: d, d: dep, db: db, log: env.Log}
	return dr.slice, nil
}

type drainer struct {
	Drain
	d   *harness.Deployment
	db  *harness.SQL
	log *slog.Logger
	// next numbers the next seeded job's message.
	next int
	// fastest is the highest rate of a slice so far, in jobs per second.
	fastest float64
}

const (
	countPending   = "SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable')"
	countCompleted = "SELECT count(*) FROM jobs WHERE state = 'completed'"
	// countTrouble counts what a job that finds nothing to do should never
	// leave: jobs waiting for a retry or given up.
	countTrouble = "SELECT count(*) FROM jobs WHERE state IN ('retryable', 'dead')"
	countRunning = "SELECT count(*) FROM jobs WHERE state = 'running'"
)

func (d *drainer) slice(ctx context.Context, dur time.Duration) (harness.Sample, error) {
	// Untimed: what retention pruning does a day later, so every slice starts on a
	// table of the same size; the top-up; and the statistics the claim's plan needs,
	// as autovacuum would keep them.
	t0 := time.Now()
	if err := d.db.Exec(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	t1 := time.Now()
	if err := d.topUp(ctx, topUpTarget(d.MinPending, d.fastest, dur)); err != nil {
		return harness.Sample{}, err
	}
	t2 := time.Now()
	if err := d.db.Exec(ctx, "VACUUM (ANALYZE) jobs"); err != nil {
		return harness.Sample{}, err
	}
	trouble, err := d.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, err
	}
	d.log.Debug("queue ready", "delete", t1.Sub(t0).Round(time.Millisecond), "top_up", t2.Sub(t1).Round(time.Millisecond), "analyze", time.Since(t2).Round(time.Millisecond))

	sb, err := d.d.Serve(ctx, "--job-workers", strconv.Itoa(d.Workers), "--db-max-conns", strconv.Itoa(d.MaxConns))
	if err != nil {
		return harness.Sample{}, err
	}
	defer sb.Stop()
	if err := sleep(ctx, d.Settle); err != nil {
		return harness.Sample{}, err
	}
	// Each count sees the rows committed when its statement starts: the interval
	// runs from the first statement's start to the second's.
	start := time.Now()
	before, err := d.db.Int(ctx, countCompleted)
	if err != nil {
		return harness.Sample{}, err
	}
	if err := sleep(ctx, dur-time.Since(start)); err != nil {
		return harness.Sample{}, err
	}
	counted := time.Since(start)
	after, err := d.db.Int(ctx, countCompleted)
	if err != nil {
		return harness.Sample{}, err
	}
	if err := sb.Stop(); err != nil {
		return harness.Sample{}, err
	}
	// The slice's dead rows are its own cost: cleaning them up is timed.
	vacuumed := time.Now()
	if err := d.db.Exec(ctx, "VACUUM jobs"); err != nil {
		return harness.Sample{}, err
	}
	vacuum := time.Since(vacuumed)
	d.log.Info("drain slice", "counted", counted.Round(time.Millisecond), "vacuum", vacuum.Round(time.Millisecond))

	s := harness.Sample{Ops: after - before, Elapsed: counted + vacuum}
	left, err := d.db.Int(ctx, countPending)
	if err != nil {
		return harness.Sample{}, err
	}
	if left == 0 {
		return harness.Sample{}, fmt.Errorf("the queue ran dry: its rate says only that it was at least %.0f jobs/s", s.Rate())
	}
	d.fastest = max(d.fastest, s.Rate())
	lost, err := d.db.Int(ctx, countRunning)
	if err != nil {
		return harness.Sample{}, err
	}
	troubleAfter, err := d.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, err
	}
	if lost > 0 {
		s.Failed += lost
		s.FirstFailure = fmt.Sprintf("%d jobs left running by the stopped server, their completions never recorded", lost)
	}
	if n := troubleAfter - trouble; n > 0 {
		s.Failed += n
		if s.FirstFailure == "" {
			s.FirstFailure = fmt.Sprintf("%d jobs await a retry or were given up", n)
		}
	}
	return s, nil
}

// topUp seeds jobs until want are pending, in one statement: a fraction of the
// time per-job inserts take, and untimed either way.
func (d *drainer) topUp(ctx context.Context, want int) error {
	pending, err := d.db.Int(ctx, countPending)
	if err != nil {
		return err
	}
	need := want - pending
	if need <= 0 {
		return nil
	}
	account := "''"
	if d.Accounts > 0 {
		account = fmt.Sprintf("'acc_bench' || lpad((i %% %d)::text, 8, '0')", d.Accounts)
	}
	err = d.db.Exec(ctx, fmt.Sprintf(`
		INSERT INTO jobs (kind, state, payload, max_attempts, run_at, created_at, account_id)
		SELECT 'message.deliver', 'available', convert_to('{"message_id":"' || %s || '"}', 'UTF8'), 12, %[2]d, %[2]d, %[5]s
		FROM generate_series(%[3]d::bigint, %[4]d::bigint) AS i`,
		absentMessage("i"), time.Now().UnixMicro(), d.next, d.next+need-1, account))
	if err != nil {
		return fmt.Errorf("top up the queue: %w", err)
	}
	d.next += need
	return nil
}

// absentMessage is the id of a message no scenario creates, numbered by the SQL
// integer expression i: a valid message id, so the handler looks it up.
func absentMessage(i string) string { return "'msg_' || lpad((" + i + ")::text, 26, 'z')" }
