package messaging

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"syscall"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Recovery measures how long the deliveries of a server killed with SIGKILL under
// load take to be done by its successor: the time from the kill until every message
// whose delivery job was running at the kill (claimed, leased, perhaps half sent) is
// delivered, the successor being started at once. Those deliveries wait for their
// leases to end and a rescue to return them to the queue; everything else is the
// successor's ordinary work.
//
// Each slice tops the queue up to Queued messages over Numbers sandbox numbers
// (as Dispatch seeds them), starts a server with Workers job workers, lets it deliver
// for Run, kills it, notes the delivery jobs left running, starts a server again and
// waits until each of those messages is delivered. The slice's one latency is that
// wait, from the kill.
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
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, env, d)
	if err != nil {
		return nil, err
	}
	if err := addNumbers(ctx, d, db, rc.Numbers); err != nil {
		return nil, err
	}
	if err := seedThreads(ctx, db, d.AccountID, rc.Numbers, "k", time.Now().UTC().Truncate(time.Microsecond)); err != nil {
		return nil, err
	}
	r := &recoverer{Recovery: rc, ds: &dispatcher{Dispatch: Dispatch{Numbers: rc.Numbers}, d: d, db: db, next: 1, log: env.Log}, log: env.Log}
	return r.slice, nil
}

type recoverer struct {
	Recovery
	ds  *dispatcher
	log *slog.Logger
}

func (r *recoverer) slice(ctx context.Context, _ time.Duration) (harness.Sample, error) {
	db := r.ds.db
	if err := exec(ctx, db, "DELETE FROM jobs WHERE state = 'completed'"); err != nil {
		return harness.Sample{}, err
	}
	if err := r.ds.topUp(ctx, r.Queued); err != nil {
		return harness.Sample{}, err
	}
	flags := []string{"--job-workers", strconv.Itoa(r.Workers)}
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
	killed := time.Now()
	var messages []string
	err = db.Bun().NewRaw(`SELECT convert_from(payload, 'UTF8')::json->>'message_id' FROM jobs
		WHERE state = 'running' AND kind = 'message.deliver'`).Scan(ctx, &messages)
	if err != nil {
		return harness.Sample{}, fmt.Errorf("running deliveries: %w", err)
	}
	if len(messages) == 0 {
		return harness.Sample{}, fmt.Errorf("no delivery was running at the kill, after %s of delivering", r.Run)
	}
	successor, err := r.ds.d.Serve(ctx, flags...)
	if err != nil {
		return harness.Sample{}, err
	}
	defer successor.Stop()
	started := time.Since(killed)
	deadline := killed.Add(r.Timeout)
	for {
		left, err := count(ctx, db, "SELECT count(*) FROM messages WHERE id IN (?) AND status <> 'delivered'", bun.List(messages))
		if err != nil {
			return harness.Sample{}, err
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return harness.Sample{Failed: 1, FirstFailure: fmt.Sprintf("%d of the %d deliveries running at the kill not done %s after it", left, len(messages), r.Timeout)}, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return harness.Sample{}, err
		}
	}
	took := time.Since(killed)
	r.log.Info("recovered", "running_at_kill", len(messages), "successor_ready_after", started.Round(time.Millisecond), "took", took.Round(time.Millisecond))
	if err := successor.Stop(); err != nil {
		return harness.Sample{}, err
	}
	return harness.Sample{Ops: 1, Elapsed: took, Latencies: []time.Duration{took}}, nil
}
