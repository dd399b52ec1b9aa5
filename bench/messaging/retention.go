package messaging

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Pruner measures what the history pruner costs the sends that run beside it
// (issue 39): closed-loop individual sends through a server whose pruner deletes
// all the time (history kept PrunedFor, a pass every PrunedEvery) against the same
// sends through a server whose pruner never runs in a slice, each on a deployment of
// its own. Both servers run jobs: every send is delivered through the sandbox and
// its events are delivered to a receiver, so each send leaves history behind, and
// the pruner deletes the history of the slices before. Each slice starts its side's
// server and stops it at the end, so the side that waits does not compete.
type Pruner struct {
	Clients  int
	Users    int
	Numbers  int
	MaxConns int
	// PrunedFor and PrunedEvery are the retention and pass interval of the
	// pruning side.
	PrunedFor, PrunedEvery time.Duration
}

// Baseline is the sends with the pruner off.
func (p Pruner) Baseline() harness.Baseline {
	return harness.Baseline{Name: "the same sends, pruner off", Unit: "sends", Setup: func(ctx context.Context, env *harness.Env) (harness.Slice, error) {
		return p.side(ctx, env, "--history-prune-interval", "100000h")
	}}
}

// Setup prepares the pruning side.
func (p Pruner) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	return p.side(ctx, env, "--history-retention", p.PrunedFor.String(), "--history-prune-interval", p.PrunedEvery.String())
}

// side provisions a deployment whose users wrote first, with its webhook set to a
// receiver, and returns the slice that serves it with flags.
func (p Pruner) side(ctx context.Context, env *harness.Env, flags ...string) (harness.Slice, error) {
	d, err := webhookDeployment(ctx, env, p.Numbers)
	if err != nil {
		return nil, err
	}
	convs := conversations(p.Users, p.Numbers)
	api, err := d.Serve(ctx, "--jobs=false", "--db-max-conns", "4")
	if err != nil {
		return nil, err
	}
	if err := writeFirst(ctx, api, convs); err != nil {
		return nil, err
	}
	if err := api.Stop(); err != nil {
		return nil, err
	}
	bodies, err := sendBodies(convs)
	if err != nil {
		return nil, err
	}
	flags = append(append([]string{"--db-max-conns", strconv.Itoa(p.MaxConns)}, harness.AllowLoopback...), flags...)
	return func(ctx context.Context, dur time.Duration) (harness.Sample, error) {
		sb, err := d.Serve(ctx, flags...)
		if err != nil {
			return harness.Sample{}, err
		}
		defer sb.Stop()
		load, err := harness.NewRotatingPostLoad(p.Clients, sb.URL+"/v1/messages/individual/"+sb.AccountID+"/send", sb.Header(), bodies)
		if err != nil {
			return harness.Sample{}, err
		}
		s, err := load.Run(ctx, dur)
		if err != nil {
			return harness.Sample{}, err
		}
		return s, sb.Stop()
	}, nil
}

// webhookDeployment is a new deployment with numbers agent numbers and its
// webhook set to a receiver that answers at once.
func webhookDeployment(ctx context.Context, env *harness.Env, numbers int) (*harness.Deployment, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, err
	}
	if err := addNumbers(ctx, d, numbers); err != nil {
		return nil, err
	}
	rc, err := env.StartReceiver(false)
	if err != nil {
		return nil, err
	}
	return d, d.SetWebhook(ctx, d.AccountID, rc.URL)
}

// conversations are users users, user k writing to agent number k mod numbers.
func conversations(users, numbers int) []conversation {
	convs := make([]conversation, users)
	for k := range convs {
		convs[k] = conversation{user: userNumber(k), agent: agentNumber(k % numbers)}
	}
	return convs
}

// sendBodies are the send bodies of the agents' answers to convs, one each.
func sendBodies(convs []conversation) ([][]byte, error) {
	bodies := make([][]byte, len(convs))
	for i, c := range convs {
		b, err := json.Marshal(map[string]string{"from": c.agent, "to": c.user, "service": service, "content": body})
		if err != nil {
			return nil, err
		}
		bodies[i] = b
	}
	return bodies, nil
}

// post is one request of postAll: a path of the server and its JSON body.
type post struct {
	path string
	body any
}

// postAll posts each request to sb from 16 clients at once, untimed, and
// returns the first failure.
func postAll(ctx context.Context, sb *harness.Switchboard, posts []post) error {
	return harness.ForEach(ctx, 16, posts, func(ctx context.Context, p post) error {
		if err := harness.PostJSON(ctx, sb.URL+p.path, sb.Header(), p.body, nil); err != nil {
			return fmt.Errorf("POST %s: %w", p.path, err)
		}
		return nil
	})
}
