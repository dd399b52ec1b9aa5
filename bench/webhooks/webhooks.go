// Package webhooks benchmarks customer webhook delivery (issue 7) through the real
// server binary: how many deliveries per second its job runner makes to a receiver on
// 127.0.0.1 (Fanout, against the pgbench insert baseline), and how long an inbound
// sandbox message takes from the inbound request to its delivery at 100 messages per
// second (Latency), and how long one account's deliveries and sends take beside a
// noisy account whose receivers hang (Noisy).
//
// The receiver runs in the bench process (harness.Receiver): it answers 204 at once
// and notes when each payload arrived, by message id. The account's webhook points at
// it over plain http, which the servers allow with harness.AllowLoopback. What the
// bench seeds or counts in the database it does with SQL (harness.SQL), on Postgres.
package webhooks

import (
	"context"
	"time"
)

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
