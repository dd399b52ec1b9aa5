// Package agents benchmarks the MCP server that LLM agents use (issue 25) through
// the real server binary and the MCP Go SDK's client, as an agent runtime would
// connect.
package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Wait measures how soon a waiting wait_for_message call returns a message a user
// sends: Waiters MCP sessions each wait for the next message of a thread of their
// own; Settle after each call is sent, that thread's user sends a message through
// the sandbox inbound route, and the latency runs from sending that request (so it
// includes the inbound request and its commit, the most an observer outside the
// server can attribute) to the call's answer at the client. A call that answers
// anything but that message (a time-out, another message, a tool error) is a
// failure. The server runs with its defaults.
type Wait struct {
	// Waiters is the number of sessions waiting at once, one thread each.
	Waiters int
	// Settle is how long after sending a call its message is sent: long enough
	// for the server to have registered the wait, which only messages arriving
	// after it counts.
	Settle time.Duration
	// Timeout is each call's timeout_seconds.
	Timeout time.Duration
}

const agentNumber = "+15550000001"

// Setup provisions the deployment with one sandbox number, starts the server, has
// each waiter's user write once (creating its thread) and connects the sessions.
func (w Wait) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := d.AddNumber(ctx, agentNumber, "whatsapp", "sandbox"); err != nil {
		return nil, err
	}
	sb, err := d.Serve(ctx)
	if err != nil {
		return nil, err
	}
	httpClient := &http.Client{Transport: &authenticated{header: sb.Header(), next: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4 * w.Waiters}}}
	env.AfterScenario(httpClient.CloseIdleConnections)
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	waiters := make([]*waiter, w.Waiters)
	for i := range waiters {
		wt := &waiter{Wait: w, sb: sb, user: fmt.Sprintf("+1556%07d", i)}
		var first struct {
			ThreadID string `json:"thread_id"`
		}
		if err := wt.inbound(ctx, "hello", &first); err != nil {
			return nil, err
		}
		wt.threadID = first.ThreadID
		wt.session, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: sb.URL + "/mcp", HTTPClient: httpClient, MaxRetries: -1}, nil)
		if err != nil {
			return nil, fmt.Errorf("connect to /mcp: %w", err)
		}
		env.AfterScenario(func() { _ = wt.session.Close() })
		waiters[i] = wt
	}
	return func(ctx context.Context, d time.Duration) (harness.Sample, error) {
		samples := make([]harness.Sample, len(waiters))
		var wg sync.WaitGroup
		for i, wt := range waiters {
			wg.Go(func() { samples[i] = wt.run(ctx, d) })
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return harness.Sample{}, err
		}
		return harness.Concurrent(samples), nil
	}, nil
}

// authenticated adds the account's credentials to each request, as an agent
// runtime configured with them does.
type authenticated struct {
	header http.Header
	next   http.RoundTripper
}

func (a *authenticated) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range a.header {
		req.Header[k] = v
	}
	return a.next.RoundTrip(req)
}

// waiter is one session waiting on one thread.
type waiter struct {
	Wait
	sb       *harness.Switchboard
	user     string
	threadID string
	session  *sdk.ClientSession
	n        int
}

// run waits and wakes in turn for about d.
func (wt *waiter) run(ctx context.Context, d time.Duration) harness.Sample {
	var s harness.Sample
	start := time.Now()
	for deadline := start.Add(d); time.Now().Before(deadline) && ctx.Err() == nil; {
		latency, err := wt.once(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.Failed++
			if s.FirstFailure == "" {
				s.FirstFailure = err.Error()
			}
		default:
			s.Ops++
			s.Latencies = append(s.Latencies, latency)
		}
	}
	s.Elapsed = time.Since(start)
	return s
}

// answer is what a call of wait_for_message answered, and when.
type answer struct {
	res *sdk.CallToolResult
	err error
	at  time.Time
}

// once sends a call, then the message it should wake for, and returns the time from
// sending the message to the call's answer.
func (wt *waiter) once(ctx context.Context) (time.Duration, error) {
	wt.n++
	text := "wake " + strconv.Itoa(wt.n)
	answered := make(chan answer, 1)
	go func() {
		res, err := wt.session.CallTool(ctx, &sdk.CallToolParams{Name: "wait_for_message",
			Arguments: map[string]any{"thread_id": wt.threadID, "timeout_seconds": int(wt.Timeout / time.Second)}})
		answered <- answer{res: res, err: err, at: time.Now()}
	}()
	select {
	case <-time.After(wt.Settle):
	case a := <-answered:
		return 0, fmt.Errorf("wait_for_message answered before its message was sent: %v", describe(a))
	}
	sent := time.Now()
	sendErr := wt.inbound(ctx, text, nil)
	a := <-answered
	if sendErr != nil {
		return 0, sendErr
	}
	if a.err != nil {
		return 0, fmt.Errorf("wait_for_message: %w", a.err)
	}
	var got struct {
		TimedOut bool `json:"timed_out"`
		Message  *struct {
			Text string `json:"text"`
		} `json:"message"`
	}
	raw, _ := json.Marshal(a.res.StructuredContent)
	if a.res.IsError || json.Unmarshal(raw, &got) != nil || got.Message == nil || got.Message.Text != text {
		return 0, fmt.Errorf("wait_for_message for %q answered %v", text, describe(a))
	}
	return a.at.Sub(sent), nil
}

// describe quotes an answer for a failure's message.
func describe(a answer) string {
	if a.err != nil {
		return a.err.Error()
	}
	raw, _ := json.Marshal(a.res.StructuredContent)
	return string(raw)
}

// inbound sends the waiter's user's message text through the sandbox inbound route
// and decodes the answer into out (unless nil).
func (wt *waiter) inbound(ctx context.Context, text string, out any) error {
	in := map[string]string{"service": "whatsapp", "from": wt.user, "to": agentNumber, "content": text}
	if err := harness.PostJSON(ctx, wt.sb.URL+"/v1/sandbox/"+wt.sb.AccountID+"/inbound", wt.sb.Header(), in, out); err != nil {
		return fmt.Errorf("inbound message: %w", err)
	}
	return nil
}
