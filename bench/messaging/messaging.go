// Package messaging benchmarks the messaging API of issue 4 through the real server
// binary: sending to users (Send), reading messages and threads back (Read), and
// delivering queued messages through the sandbox provider (Dispatch).
//
// Each scenario provisions a deployment of its own (harness.Env.NewDeployment): a new
// Postgres database, migrated, with the bench account and its sandbox WhatsApp
// numbers (added with the operator CLI), dropped when the scenario ends. Rows the API
// would take too long to create (a million messages to read, a hundred thousand to
// deliver) are written by SQL (harness.SQL) that matches what the use cases write,
// untimed, and checked against the server's own at set-up; see seed.go.
//
// Postgres allows 100 connections. A server's pool stays open between slices, while a
// pgbench baseline at 64 clients runs, so pools here are sized to leave room for
// that, the harness's own connections and the run's shared server (8); see each
// scenario's MaxConns.
package messaging

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

const (
	// service is the channel every scenario uses.
	service = "whatsapp"
	// body is the text of every message.
	body = "bench message"
)

// agentNumber is the E.164 number of the bench account's agent number k (k < 10^7 - 1),
// the same in Go and in the seeding SQL (agentNumberSQL): +15550000001 is number 0.
func agentNumber(k int) string { return fmt.Sprintf("+1555%07d", 1+k) }

// agentNumberSQL is agentNumber of the SQL integer expression k.
func agentNumberSQL(k string) string { return "'+1555' || lpad((1 + " + k + ")::text, 7, '0')" }

// userNumber is the E.164 number of bench user k (k < 10^7), the same in Go and in
// the seeding SQL (userNumberSQL).
func userNumber(k int) string { return fmt.Sprintf("+1556%07d", k) }

// userNumberSQL is userNumber of the SQL integer expression k.
func userNumberSQL(k string) string { return "'+1556' || lpad((" + k + ")::text, 7, '0')" }

// seqID is the id with the given prefix ("msg", "thr") of seeded row i: i in decimal,
// left-padded with 'a' to the 26 characters of a generated id. It passes ident.Valid
// and differs for each i (no decimal number starts with an 'a'); that a generated id
// is one of them has a chance of one in 32^26 or so.
func seqID(prefix string, i int) string {
	d := fmt.Sprint(i)
	return prefix + "_" + strings.Repeat("a", max(0, 26-len(d))) + d
}

// seqIDSQL is seqID of the SQL integer expression i.
func seqIDSQL(prefix, i string) string {
	return "'" + prefix + "_' || lpad((" + i + ")::text, 26, 'a')"
}

// addNumbers adds enabled sandbox agent numbers 0 … n-1 (agentNumber) to the bench
// account with `switchboard numbers add`, a few at a time.
func addNumbers(ctx context.Context, d *harness.Deployment, n int) error {
	numbers := make([]string, n)
	for k := range numbers {
		numbers[k] = agentNumber(k)
	}
	return d.AddNumbers(ctx, numbers, service, "sandbox")
}

// conversation is a user and the agent number that user writes to.
type conversation struct{ user, agent string }

// writeFirst has the user of each conversation send its agent number a message
// through the sandbox inbound route, as a user must before the agent may write to
// them; concurrently, untimed.
func writeFirst(ctx context.Context, sb *harness.Switchboard, convs []conversation) error {
	posts := make([]post, len(convs))
	for i, c := range convs {
		posts[i] = post{path: "/v1/sandbox/" + sb.AccountID + "/inbound", body: map[string]string{"service": service, "from": c.user, "to": c.agent, "message": "hi"}}
	}
	return postAll(ctx, sb, posts)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
