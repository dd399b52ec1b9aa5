// Package retention deletes the history of accounts once it is older
// than their history retention (account.Account.HistoryRetention): events,
// webhook deliveries with their attempts, cron executions and the sandbox
// mailbox; and, for the accounts with a message retention, their messages
// and emails once older than it (their history then goes at the shorter
// of the two periods, account.Account.HistoryCutoff). A pass walks every account and every kind in small batches,
// each its own short transaction, pausing after a batch as long as it
// took so that sends running meanwhile keep most of the database;
// one process at a time prunes (Lock), whichever replica gets there.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// Defaults of Options.
const (
	DefaultInterval = 10 * time.Minute
	DefaultBatch    = 1000
)

// Options tune a Pruner; zero fields take the defaults.
type Options struct {
	// Retention is the server's history retention, which accounts without
	// their own follow; account.DefaultHistoryRetention when 0.
	Retention time.Duration
	// Interval is the time between passes (DefaultInterval).
	Interval time.Duration
	// Batch bounds the rows one statement reads and deletes
	// (DefaultBatch).
	Batch int
	// Now is the clock cutoffs are taken from; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Pruner deletes old history.
type Pruner struct {
	store  Store
	lock   Lock
	opts   Options
	outage *outage.Tracker
}

// New builds a pruner over store, one process at a time through lock.
func New(store Store, lock Lock, opts Options) *Pruner {
	if opts.Retention <= 0 {
		opts.Retention = account.DefaultHistoryRetention
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Pruner{store: store, lock: lock, opts: opts,
		outage: outage.NewTracker(opts.Logger, "prune history", opts.Interval, opts.Interval)}
}

// Report is what a pass did.
type Report struct {
	// Ran is false when another process was pruning.
	Ran bool
	// Deleted counts the rows deleted per kind.
	Deleted map[Kind]int
}

// Prune makes one pass: every account's history older than its retention
// at the pass's start is deleted, but what is still needed (Store). When
// another process is pruning, it does nothing.
func (p *Pruner) Prune(ctx context.Context) (Report, error) {
	report := Report{Deleted: map[Kind]int{}}
	ran, err := p.lock.Exclusively(ctx, func(ctx context.Context) error {
		return p.pass(ctx, report.Deleted)
	})
	report.Ran = ran
	return report, err
}

func (p *Pruner) pass(ctx context.Context, deleted map[Kind]int) error {
	now := p.opts.Now()
	accounts, err := p.store.AccountRetentions(ctx)
	if err != nil {
		return err
	}
	for _, a := range accounts {
		acc := account.Account{HistoryRetentionDays: a.Days, MessageRetentionDays: a.MessageDays}
		if err := p.pruneKinds(ctx, a.AccountID, Kinds, now.Add(-acc.HistoryCutoff(p.opts.Retention)), deleted); err != nil {
			return err
		}
		if keep := acc.MessageRetention(); keep > 0 {
			if err := p.pruneKinds(ctx, a.AccountID, MessageKinds, now.Add(-keep), deleted); err != nil {
				return err
			}
		}
	}
	return nil
}

// pruneKinds prunes each of kinds of the account older than before.
func (p *Pruner) pruneKinds(ctx context.Context, accountID string, kinds []Kind, before time.Time, deleted map[Kind]int) error {
	for _, kind := range kinds {
		n, err := p.prune(ctx, Query{Kind: kind, AccountID: accountID, Before: before, Limit: p.opts.Batch})
		deleted[kind] += n
		if err != nil {
			return fmt.Errorf("prune %s of %s: %w", kind, accountID, err)
		}
	}
	return nil
}

// prune walks one kind of one account batch by batch until nothing more
// is old, and returns how many rows it deleted. Between two batches it
// waits as long as the first took: the pruner then holds the database at
// most half of the time, also while it walks past rows still needed.
func (p *Pruner) prune(ctx context.Context, q Query) (int, error) {
	deleted := 0
	for {
		start := time.Now()
		step, err := p.store.PruneHistory(ctx, q)
		if err != nil {
			return deleted, err
		}
		deleted += step.Deleted
		if step.Done {
			return deleted, nil
		}
		q.After, q.AfterKey = step.Next, step.NextKey
		if err := sleep(ctx, time.Since(start)); err != nil {
			return deleted, err
		}
	}
}

// Run prunes every Interval until ctx ends, the first pass one Interval
// after it starts.
func (p *Pruner) Run(ctx context.Context) {
	for sleep(ctx, p.opts.Interval) == nil {
		report, err := p.Prune(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.outage.Failed(err)
			}
			continue
		}
		p.outage.Succeeded()
		if total := report.total(); total > 0 {
			p.opts.Logger.Info("pruned history", "rows", total, "events", report.Deleted[Events],
				"webhook_deliveries", report.Deleted[WebhookDeliveries], "cron_executions", report.Deleted[CronExecutions],
				"sandbox_emails", report.Deleted[SandboxEmails], "messages", report.Deleted[Messages], "emails", report.Deleted[Emails])
		}
	}
}

func (r Report) total() int {
	n := 0
	for _, d := range r.Deleted {
		n += d
	}
	return n
}

// sleep waits d or until ctx ends, and returns ctx's error then.
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
