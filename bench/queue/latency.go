package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Latency measures how long a committed job waits for its handler to start, on a
// queue with a light steady load, through a server with the default runner (as
// `switchboard serve` runs it), up for the whole scenario: one producer commits one
// job every Interval, and the handler's start is seen from outside.
//
// The job is a webhook delivery: the producer posts a sandbox inbound message,
// whose answer (2xx) comes after the commit of the message with its event, its
// delivery and the delivery's job; the handler's first act visible outside the
// server is its POST to the bench's receiver (harness.Receiver), after it has read
// the delivery and signed the payload. The latency is the receiver's arrival time
// minus the inbound's answer time: the wait for the handler and its first steps,
// which the server's other handlers share. Each message comes from a new user, so
// it has a thread of its own, and no earlier delivery of the thread holds it back.
// The runner may take a job before the answer has reached the producer; such a job's
// latency is counted as 0. The producer waits for each answer before the next tick,
// as a producer committing in its own transaction does.
//
// After its last enqueue a slice waits up to StartTimeout for its jobs to start; a
// job that has not started by then counts as a failure, not as a latency.
type Latency struct {
	// Interval is the time between enqueues.
	Interval time.Duration
	// StartTimeout bounds the wait for a slice's last jobs to start.
	StartTimeout time.Duration
}

// agent is the bench account's one agent number, a sandbox WhatsApp number.
const agent = "+15550000001"

// Setup provisions the scenario's deployment with one sandbox number, starts the
// receiver, points the webhook at it, starts the server and returns the latency
// slice.
func (l Latency) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	if l.Interval <= 0 || l.StartTimeout <= 0 {
		return nil, fmt.Errorf("want Interval and StartTimeout above 0, have %s and %s", l.Interval, l.StartTimeout)
	}
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := d.AddNumber(ctx, agent, "whatsapp", "sandbox"); err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(true)
	if err != nil {
		return nil, err
	}
	if err := d.SetWebhook(ctx, d.AccountID, rc.URL); err != nil {
		return nil, err
	}
	sb, err := d.Serve(ctx, harness.AllowLoopback...)
	if err != nil {
		return nil, err
	}
	p := &prober{Latency: l, sb: sb, rc: rc}
	return p.slice, nil
}

type prober struct {
	Latency
	sb *harness.Switchboard
	rc *harness.Receiver
	// n numbers the producer's users.
	n int
}

func (p *prober) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	commits := map[string]time.Time{}
	var failed int
	var first string
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	start := time.Now()
	deadline := start.Add(d)
	for {
		select {
		case <-ctx.Done():
			return harness.Sample{}, ctx.Err()
		case <-tick.C:
		}
		if !time.Now().Before(deadline) {
			break
		}
		id, err := p.enqueue(ctx)
		committed := time.Now()
		if ctx.Err() != nil {
			return harness.Sample{}, ctx.Err()
		}
		if err != nil {
			failed++
			if first == "" {
				first = err.Error()
			}
			continue
		}
		commits[id] = committed
	}
	elapsed := time.Since(start)

	starts, err := p.await(ctx, commits)
	if err != nil {
		return harness.Sample{}, err
	}
	lat, missing := latencies(commits, starts)
	s := harness.Sample{Ops: len(lat), Elapsed: elapsed, Latencies: lat, Failed: failed + len(missing), FirstFailure: first}
	if s.FirstFailure == "" && len(missing) > 0 {
		s.FirstFailure = fmt.Sprintf("%d jobs (first message %s) had not started %s after the slice's last enqueue", len(missing), missing[0], p.StartTimeout)
	}
	return s, nil
}

// enqueue posts one inbound message from a new user and returns its id.
func (p *prober) enqueue(ctx context.Context) (string, error) {
	p.n++
	var out struct {
		MessageID string `json:"message_id"`
	}
	err := harness.PostJSON(ctx, p.sb.URL+"/v1/sandbox/"+p.sb.AccountID+"/inbound", p.sb.Header(),
		map[string]string{"service": "whatsapp", "from": fmt.Sprintf("+1557%07d", p.n), "to": agent, "content": "bench message"}, &out)
	if err == nil && out.MessageID == "" {
		err = fmt.Errorf("inbound: no message_id in the answer")
	}
	return out.MessageID, err
}

// await waits until the receiver has the delivery of every message of commits or
// StartTimeout has passed, and returns the arrivals it took.
func (p *prober) await(ctx context.Context, commits map[string]time.Time) (map[string]time.Time, error) {
	starts := make(map[string]time.Time, len(commits))
	deadline := time.Now().Add(p.StartTimeout)
	for {
		for id := range commits {
			if _, done := starts[id]; done {
				continue
			}
			if at, ok := p.rc.Take(id); ok {
				starts[id] = at
			}
		}
		if len(starts) == len(commits) || !time.Now().Before(deadline) {
			return starts, nil
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// latencies pairs each committed job with its start: start minus commit, or 0 when
// the handler started before the producer saw the commit's answer. It returns the
// latencies and, in ascending order, the messages whose job did not start.
func latencies(commits, starts map[string]time.Time) ([]time.Duration, []string) {
	var lat []time.Duration
	var missing []string
	for id, committed := range commits {
		started, ok := starts[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		lat = append(lat, max(started.Sub(committed), 0))
	}
	slices.Sort(missing)
	return lat, missing
}
