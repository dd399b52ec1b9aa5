package messaging

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Recovery measures how long the deliveries of a server killed with SIGKILL under
// load take to be done by its successor: the time from the kill until every delivery
// job that was running at the kill (claimed and leased; its message perhaps sent, its
// completion not yet written) has completed, the successor being started at once.
// The successor registers its process, finds the victim's lock free and, once it
// has stayed free for the grace period (on the database clock), takes those jobs
// back at once; their leases (10 s) are for a server that stalls. Everything else
// is the successor's ordinary work.
//
// Each slice tops the queue up to Queued messages over Numbers sandbox numbers
// (as Dispatch seeds them), starts a server with Workers job workers, lets it deliver
// for Run, kills it, notes the delivery jobs left running, starts a server again and
// waits until each of those jobs has completed. The slice's one latency is that wait,
// from the kill.
type Recovery struct {
	Numbers int
	Queued  int
	Workers int
	// Run is how long the first server delivers before it is killed.
	Run time.Duration
	// Timeout bounds the wait for the recovery.
	Timeout time.Duration
}

// Setup provisions the deployment with its numbers and threads and returns the slice.
func (rc Recovery) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	ds, err := newDispatcher(ctx, env, Dispatch{Numbers: rc.Numbers})
	if err != nil {
		return nil, err
	}
	r := &recoverer{Recovery: rc, ds: ds, log: env.Log}
	return r.slice, nil
}

type recoverer struct {
	Recovery
	ds  *dispatcher
	log *slog.Logger
}

func (r *recoverer) slice(ctx context.Context, _ time.Duration) (harness.Sample, error) {
	db := r.ds.db
	if err := db.Exec(ctx, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	if err := r.ds.topUp(ctx, r.Queued); err != nil {
		return harness.Sample{}, err
	}
	flags := []string{"--job-workers", strconv.Itoa(r.Workers)}
	// Between two claims a runner of quick deliveries may hold none: a kill
	// then leaves nothing to recover, and the server is started and killed
	// again.
	var (
		running []string
		killed  time.Time
	)
	for try := 1; len(running) == 0; try++ {
		if try > 5 {
			return harness.Sample{}, fmt.Errorf("no delivery was running at %d kills, each after %s of delivering", try-1, r.Run)
		}
		victim, err := r.ds.d.Serve(ctx, flags...)
		if err != nil {
			return harness.Sample{}, err
		}
		if err := sleep(ctx, r.Run); err != nil {
			return harness.Sample{}, err
		}
		if err := syscall.Kill(victim.PID(), syscall.SIGKILL); err != nil {
			return harness.Sample{}, fmt.Errorf("kill the server: %w", err)
		}
		killed = time.Now()
		// What the victim had sent before it died (a completion's commit)
		// is still written: read the jobs left running once it has.
		if err := victim.Stop(); err != nil {
			return harness.Sample{}, err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return harness.Sample{}, err
		}
		running, err = db.Column(ctx, "SELECT id FROM jobs WHERE state = 'running' AND kind = 'message.deliver'")
		if err != nil {
			return harness.Sample{}, fmt.Errorf("running deliveries: %w", err)
		}
	}
	successor, err := r.ds.d.Serve(ctx, flags...)
	if err != nil {
		return harness.Sample{}, err
	}
	defer successor.Stop()
	started := time.Since(killed)
	deadline := killed.Add(r.Timeout)
	for {
		left, err := db.Int(ctx, "SELECT count(*) FROM jobs WHERE id IN "+harness.QuoteList(running)+" AND state <> 'completed'")
		if err != nil {
			return harness.Sample{}, err
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return harness.Sample{Failed: 1, FirstFailure: fmt.Sprintf("%d of the %d deliveries running at the kill not completed %s after it", left, len(running), r.Timeout)}, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return harness.Sample{}, err
		}
	}
	took := time.Since(killed)
	r.log.Info("recovered", "running_at_kill", len(running), "successor_ready_after", started.Round(time.Millisecond), "took", took.Round(time.Millisecond))
	if err := successor.Stop(); err != nil {
		return harness.Sample{}, err
	}
	return harness.Sample{Ops: 1, Elapsed: took, Latencies: []time.Duration{took}}, nil
}
