package store

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/switchboard-dev/switchboard/application/outage"
)

// notifyInterval is the least time between two NOTIFYs of one process.
const notifyInterval = 2 * time.Millisecond

// jobsChannel is the Postgres NOTIFY channel that wakes runners in other
// processes when jobs become due.
const jobsChannel = "switchboard_jobs"

// wakeHub tells job runners that new work may be due, so they claim at once
// instead of waiting for their next poll. Runners in this process hear a
// signal as soon as the enqueuing statement or transaction commits; on
// Postgres, runners in other processes hear it through LISTEN/NOTIFY. The
// NOTIFY is sent after the commit, outside the enqueuing transaction,
// because a NOTIFY inside it would take Postgres's global notify lock at
// every commit and serialise concurrent enqueuers; signals that arrive
// while one is being sent coalesce into the next.
type wakeHub struct {
	mu     sync.Mutex
	subs   map[chan struct{}]struct{}
	notify chan struct{} // nil on SQLite
}

func newWakeHub(postgres bool) *wakeHub {
	h := &wakeHub{subs: map[chan struct{}]struct{}{}}
	if postgres {
		h.notify = make(chan struct{}, 1)
	}
	return h
}

// signal wakes every local subscriber and, on Postgres, the others.
func (h *wakeHub) signal() {
	h.local()
	if h.notify != nil {
		select {
		case h.notify <- struct{}{}:
		default:
		}
	}
}

func (h *wakeHub) local() {
	h.mu.Lock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

func (h *wakeHub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// runNotifier sends the coalesced NOTIFYs until ctx ends.
func (db *DB) runNotifier(ctx context.Context) {
	tracker := outage.NewTracker(slog.Default(), "notify job runners", notifyInterval, 0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-db.wake.notify:
			switch err := pgdriver.Notify(ctx, db.write, jobsChannel, ""); {
			case ctx.Err() != nil:
			case err != nil:
				// Runners poll meanwhile; the next enqueue notifies again.
				tracker.Failed(err)
			default:
				tracker.Succeeded()
			}
			// Each NOTIFY is a commit of its own; under a stream of
			// enqueues, one every few milliseconds wakes other replicas
			// as well as hundreds would.
			select {
			case <-ctx.Done():
			case <-time.After(notifyInterval):
			}
		}
	}
}

// JobWakeups returns a channel that receives when jobs may have become due,
// and a function to stop receiving. On Postgres the first call starts a
// LISTEN connection that relays other processes' notifications; if it
// drops, runners still poll, and it reconnects.
func (db *DB) JobWakeups() (<-chan struct{}, func()) {
	if db.dialect == Postgres {
		db.listenOnce.Do(func() {
			db.listeners.Add(1)
			go func() {
				defer db.listeners.Done()
				db.listen(db.background)
			}()
		})
	}
	return db.wake.subscribe()
}

func (db *DB) listen(ctx context.Context) {
	tracker := outage.NewTracker(slog.Default(), "listen for job notifications", time.Second, 5*time.Second)
	for ctx.Err() == nil {
		ln := pgdriver.NewListener(db.write)
		if err := ln.Listen(ctx, jobsChannel); err != nil {
			_ = ln.Close()
			if ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(tracker.Failed(err)):
				}
			}
			continue
		}
		tracker.Succeeded()
		// Anything enqueued while we were not listening is found by the
		// next claim this wake-up triggers.
		db.wake.local()
		stopped := context.AfterFunc(ctx, func() { _ = ln.Close() })
		for range ln.Channel() {
			db.wake.local()
		}
		stopped()
		_ = ln.Close()
	}
}
