// Package queue tells an account how its background work is doing: the
// jobs of the queue that deliver its messages, emails, webhooks and cron
// runs, waiting (due now or later, retrying), running, and failed for
// good. A read-only view for the console's Overview; the queue itself is
// adapters/jobs and the store.
package queue

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Store reads the job queue.
//
// Errors: when the database is away, it returns a failure of kind
// Unavailable. Other errors are infrastructure failures.
type Store interface {
	// AccountJobStats summarises the account's jobs of each kind at now,
	// ordered by kind: pending (due or scheduled, retrying among them),
	// running and dead. Kinds without such jobs are absent.
	AccountJobStats(ctx context.Context, accountID string, now time.Time) ([]jobs.Stat, error)
}

// Health is an account's queue at one moment.
type Health struct {
	// Kinds are the per-kind figures, ordered by kind.
	Kinds []jobs.Stat
	// The totals over every kind.
	Ready, Scheduled, Running, Retrying, Dead int
	// OldestReady is when the longest-waiting due job became due; zero
	// when nothing is due.
	OldestReady time.Time
	// At is when it was read.
	At time.Time
}

// Lag is how long the longest-waiting due job has waited; 0 when nothing
// is due.
func (h Health) Lag() time.Duration {
	if h.OldestReady.IsZero() || h.At.Before(h.OldestReady) {
		return 0
	}
	return h.At.Sub(h.OldestReady)
}

// Service reads the queue's health for accounts.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService builds the service; now defaults to time.Now.
func NewService(s Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: s, now: now}
}

// Health reads the account's queue.
func (s *Service) Health(ctx context.Context, accountID string) (Health, error) {
	at := s.now().UTC()
	stats, err := s.store.AccountJobStats(ctx, accountID, at)
	if err != nil {
		return Health{}, err
	}
	h := Health{Kinds: stats, At: at}
	for _, k := range stats {
		h.Ready += k.Ready
		h.Scheduled += k.Scheduled
		h.Running += k.Running
		h.Retrying += k.Retrying
		h.Dead += k.Dead
		if !k.OldestReady.IsZero() && (h.OldestReady.IsZero() || k.OldestReady.Before(h.OldestReady)) {
			h.OldestReady = k.OldestReady
		}
	}
	if h.Kinds == nil {
		h.Kinds = []jobs.Stat{}
	}
	return h, nil
}
