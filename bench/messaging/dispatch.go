package messaging

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Dispatch measures how fast the server's job runner delivers queued messages through
// the sandbox provider, which answers at once: the cost of delivery itself (claim,
// the handler's reads, the status update, the completion), not of a network.
//
// The queue holds at least MinQueued messages, spread over Numbers agent numbers in
// turn. Delivery is paced per agent number (80/s and 32 at once for WhatsApp), and
// the server has no switch to turn pacing off, so the spread is what takes pacing out
// of the measurement: Numbers × 80/s is far above any rate the runner reaches.
//
// Each slice, like queue-drain's, first (untimed) deletes completed jobs, as
// retention pruning would, tops the queue up (see topUpTarget) and vacuums and
// analyses jobs and messages, as autovacuum would; then starts a server with jobs
// on (Workers job workers, a pool of MaxConns), waits Settle once it is ready,
// counts the delivered messages, waits the slice, counts again and stops the server.
// The operations are the messages that reached status delivered between the two
// counts. The VACUUM of jobs and messages that follows is timed: their dead rows
// (three row versions per job, two per message) are the slice's own cost, which a
// server with autovacuum pays in the background. The server runs only during its
// slices, never beside the baseline. After the rounds, one slice more measures the
// CPU per message of the server and of Postgres, the VACUUM's included
// (harness.CPUFigure).
type Dispatch struct {
	// Numbers is the number of sandbox agent numbers the messages are spread over.
	Numbers int
	// MinQueued is the least number of queued messages before each slice.
	MinQueued int
	// Workers is the server's --job-workers.
	Workers int
	// MaxConns is the server's --db-max-conns.
	MaxConns int
	// Settle is how long the runner runs after the server is ready and before the
	// slice is counted: the start-up's claims and connections are not timed.
	Settle time.Duration
}

// Replicated is the dispatch scenario through n servers at once on one database,
// sharing Workers and MaxConns between them (each gets its part, rounded up), without
// the CPU follow-up: the rate of a cluster of n replicas of the same size as one.
func (dp Dispatch) Replicated(n int) func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	return func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
		ds, err := newDispatcher(ctx, env, dp)
		if err != nil {
			return nil, err
		}
		ds.replicas = n
		return ds.slice, nil
	}
}

// serveFlags are the flags of each of the slice's servers.
func (ds *dispatcher) serveFlags() []string {
	n := max(ds.replicas, 1)
	part := func(total int) string { return strconv.Itoa((total + n - 1) / n) }
	return []string{"--job-workers", part(ds.Workers), "--db-max-conns", part(ds.MaxConns)}
}

// Setup provisions the deployment with its numbers and their threads, one per number,
// checks the seeding SQL against the server, and returns the dispatch slice, whose
// top-up seeds the queue.
func (dp Dispatch) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	ds, err := newDispatcher(ctx, env, dp)
	if err != nil {
		return nil, err
	}
	env.AfterRounds(harness.CPUFollowUp("CPU per message", "message", ds.metered))
	return ds.slice, nil
}

// newDispatcher provisions a deployment with dp's numbers (added with the
// operator CLI) and their threads, one per number (seeded), checks seedQueued
// against a send through an API-only server (checkQueued), and returns the
// dispatcher that seeds and delivers its queue (Dispatch's and Recovery's).
func newDispatcher(ctx context.Context, env *harness.Env, dp Dispatch) (*dispatcher, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := addNumbers(ctx, d, dp.Numbers); err != nil {
		return nil, err
	}
	if err := seedThreads(ctx, db, d.AccountID, dp.Numbers, "k", time.Now()); err != nil {
		return nil, err
	}
	env.Log.Info("numbers and threads ready", "numbers", dp.Numbers, "took", time.Since(start).Round(time.Millisecond))
	api, err := d.Serve(ctx, "--jobs=false", "--db-max-conns", "2")
	if err != nil {
		return nil, err
	}
	if err := checkQueued(ctx, api, db, dp.Numbers); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	return &dispatcher{Dispatch: dp, d: d, db: db, next: 1, log: env.Log}, nil
}

type dispatcher struct {
	Dispatch
	d   *harness.Deployment
	db  *harness.SQL
	log *slog.Logger
	// next is the number of the next message to seed.
	next int
	// fastest is the highest rate of a slice so far, in messages per second.
	fastest float64
	// replicas is how many servers deliver in a slice; one when 0.
	replicas int
}

const (
	countDelivered = "SELECT count(*) FROM messages WHERE status = 'delivered'"
	countQueued    = "SELECT count(*) FROM jobs WHERE state IN ('available', 'retryable')"
	// countTrouble counts what a sandbox delivery should never leave: failed
	// messages, and jobs waiting for a retry or given up.
	countTrouble = "SELECT (SELECT count(*) FROM messages WHERE status = 'failed') + (SELECT count(*) FROM jobs WHERE state IN ('retryable', 'dead'))"
)

func (ds *dispatcher) slice(ctx context.Context, dur time.Duration) (harness.Sample, error) {
	s, _, err := ds.metered(ctx, dur)
	return s, err
}

// metered runs one slice and returns, with its sample, the CPU used over the counted
// interval (the server's, Postgres's, the machine's) and by the timed VACUUM after.
func (ds *dispatcher) metered(ctx context.Context, dur time.Duration) (harness.Sample, harness.CPUUse, error) {
	t0 := time.Now()
	if err := ds.db.Exec(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	if err := ds.topUp(ctx, topUpTarget(ds.MinQueued, ds.fastest, dur)); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	if err := ds.db.Exec(ctx, "VACUUM (ANALYZE) jobs, messages"); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	trouble, err := ds.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	ds.log.Debug("queue ready", "took", time.Since(t0).Round(time.Millisecond))

	servers, err := ds.serve(ctx)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	defer func() {
		for _, sb := range servers {
			_ = sb.Stop()
		}
	}()
	sb := servers[0]
	if err := sleep(ctx, ds.Settle); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	// Each count sees the rows committed when its statement starts: the interval
	// runs from the first statement's start to the second's.
	start := time.Now()
	before, err := ds.db.Int(ctx, countDelivered)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	// The CPU is metered between the counts, whose scans of the messages are the
	// bench's own work, and scaled to the counted interval.
	meter, err := harness.StartCPUMeter(sb.PID())
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	metered := time.Now()
	if err := sleep(ctx, dur-time.Since(start)); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	use, err := meter.Stop()
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	counted := time.Since(start)
	use = use.Scaled(counted.Seconds() / time.Since(metered).Seconds())
	after, err := ds.db.Int(ctx, countDelivered)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	for _, sb := range servers {
		if err := sb.Stop(); err != nil {
			return harness.Sample{}, harness.CPUUse{}, err
		}
	}
	if meter, err = harness.StartCPUMeter(0); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	vacuumed := time.Now()
	if err := ds.db.Exec(ctx, "VACUUM jobs, messages"); err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	vacuum := time.Since(vacuumed)
	vacuumUse, err := meter.Stop()
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	use = use.Add(vacuumUse)
	ds.log.Info("dispatch slice", "counted", counted.Round(time.Millisecond), "vacuum", vacuum.Round(time.Millisecond))

	s := harness.Sample{Ops: after - before, Elapsed: counted + vacuum}
	left, err := ds.db.Int(ctx, countQueued)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	if left == 0 {
		return harness.Sample{}, harness.CPUUse{}, fmt.Errorf("the queue ran dry: its rate says only that it was at least %.0f messages/s", s.Rate())
	}
	ds.fastest = max(ds.fastest, s.Rate())
	troubleAfter, err := ds.db.Int(ctx, countTrouble)
	if err != nil {
		return harness.Sample{}, harness.CPUUse{}, err
	}
	if n := troubleAfter - trouble; n > 0 {
		s.Failed = n
		s.FirstFailure = fmt.Sprintf("%d messages failed or deliveries await a retry", n)
	}
	return s, use, nil
}

// serve starts the slice's servers at once and waits until each is ready. The CPU
// meter follows the first.
func (ds *dispatcher) serve(ctx context.Context) ([]*harness.Switchboard, error) {
	n, flags := max(ds.replicas, 1), ds.serveFlags()
	servers := make([]*harness.Switchboard, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = ds.d.Serve(ctx, flags...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, sb := range servers {
			if sb != nil {
				_ = sb.Stop()
			}
		}
		return nil, err
	}
	return servers, nil
}

// topUp seeds queued messages with their delivery jobs until want are queued.
func (ds *dispatcher) topUp(ctx context.Context, want int) error {
	queued, err := ds.db.Int(ctx, countQueued)
	if err != nil {
		return err
	}
	need := want - queued
	if need <= 0 {
		return nil
	}
	if err := seedQueued(ctx, ds.db, ds.next, ds.next+need-1, ds.Numbers, time.Now()); err != nil {
		return err
	}
	ds.next += need
	return nil
}

// topUpTarget is how many messages to have queued before a slice of d: at least
// minQueued, and twice what the fastest slice so far would deliver in d, so that a
// slice somewhat faster than any before still cannot run dry.
func topUpTarget(minQueued int, fastest float64, d time.Duration) int {
	return max(minQueued, int(math.Ceil(2*fastest*d.Seconds())))
}
