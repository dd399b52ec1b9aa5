package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Latency measures the time from an inbound sandbox message to its webhook delivery,
// under a steady Interval between messages (10 ms: 100 messages/s), through a server
// that is up for the whole scenario with jobs on. Each message comes from the next of
// Users users, so each user's thread sees a message every Users × Interval.
//
// The clock starts when the inbound POST is sent (so the latency includes the
// inbound request itself, the most a client could observe) and stops when the
// receiver has read the delivery of that message (its message.received payload). A
// slice waits up to Timeout after its last message; a message not delivered by then
// is a failure.
type Latency struct {
	Interval time.Duration
	Users    int
	Timeout  time.Duration
}

// Setup provisions the deployment with one sandbox number, starts the receiver, sets
// the webhook and starts the server.
func (l Latency) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
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
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
	env.AfterScenario(client.CloseIdleConnections)
	p := &prober{Latency: l, rc: rc, sb: sb, client: client}
	return p.slice, nil
}

const agent = "+15550000001"

type prober struct {
	Latency
	rc     *harness.Receiver
	sb     *harness.Switchboard
	client *http.Client
	n      int
}

type sent struct {
	id string
	at time.Time
}

func (p *prober) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	var (
		sends   []sent
		failed  int
		first   string
		results = make(chan result, 1024)
	)
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	start := time.Now()
	deadline := start.Add(d)
	inflight := 0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return harness.Sample{}, ctx.Err()
		case <-tick.C:
		}
		p.n++
		user := fmt.Sprintf("+1556%07d", p.n%p.Users)
		inflight++
		// Sent from a goroutine so a slow answer does not delay the next message.
		go func() { results <- p.inbound(ctx, user) }()
	drain:
		for {
			select {
			case r := <-results:
				inflight--
				failed, first = collect(r, &sends, failed, first)
			default:
				break drain
			}
		}
	}
	elapsed := time.Since(start)
	for ; inflight > 0; inflight-- {
		failed, first = collect(<-results, &sends, failed, first)
	}
	var lat []time.Duration
	wait := time.Now().Add(p.Timeout)
	for _, s := range sends {
		for {
			at, ok := p.rc.Take(s.id)
			if ok {
				lat = append(lat, max(at.Sub(s.at), 0))
				break
			}
			if time.Now().After(wait) {
				failed++
				if first == "" {
					first = fmt.Sprintf("message %s was not delivered within %s", s.id, p.Timeout)
				}
				break
			}
			if err := sleep(ctx, time.Millisecond); err != nil {
				return harness.Sample{}, err
			}
		}
	}
	return harness.Sample{Ops: len(lat), Elapsed: elapsed, Latencies: lat, Failed: failed, FirstFailure: first}, nil
}

type result struct {
	sent
	err error
}

func collect(r result, sends *[]sent, failed int, first string) (int, string) {
	if r.err != nil {
		if first == "" {
			first = r.err.Error()
		}
		return failed + 1, first
	}
	*sends = append(*sends, r.sent)
	return failed, first
}

// inbound posts one sandbox inbound message and returns its id and send time.
func (p *prober) inbound(ctx context.Context, user string) result {
	body, _ := json.Marshal(map[string]string{"service": "whatsapp", "from": user, "to": agent, "content": "bench message"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.sb.URL+"/v1/sandbox/"+p.sb.AccountID+"/inbound", bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	req.Header = p.sb.Header()
	req.Header.Set("Content-Type", "application/json")
	at := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		MessageID string `json:"message_id"`
	}
	if resp.StatusCode/100 != 2 || json.Unmarshal(raw, &out) != nil || out.MessageID == "" {
		return result{err: fmt.Errorf("inbound: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))}
	}
	return result{sent: sent{id: out.MessageID, at: at}}
}
