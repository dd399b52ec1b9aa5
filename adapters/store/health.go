package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Health watching.
//
// /readyz must turn not-ready within two seconds of the database going
// away and ready within two seconds of its return, and must answer at once
// even when the database hangs. A probe that runs on the request would wait
// out its own timeout on a frozen database; so a watcher probes the
// database every probeInterval on a connection of its own (a pool
// saturated by slow queries must not look like a database that is away,
// nor delay the probe), and /readyz reads the last verdict. The watcher
// also writes the one log line an outage gets, and one when it ends.
//
// A probe without an answer after probeTimeout makes the verdict
// not-ready, but the probe itself goes on until probeGiveUp: connecting
// to a loaded server (a backend to fork, authentication) can take longer
// than probeTimeout, and a probe cut off at probeTimeout would throw each
// half-made connection away and find the database away for as long as
// the load lasts. Its answer, when it comes, is the verdict.

// The watcher's rhythm: a database that goes away is seen within
// probeInterval+probeTimeout; one that comes back, within probeInterval
// of its first answer, or probeGiveUp after it stopped answering
// silently (a probe stuck on it is abandoned then).
const (
	probeInterval = 500 * time.Millisecond
	probeTimeout  = time.Second
	probeGiveUp   = 5 * time.Second
)

// errNoAnswer is the verdict while a probe is overdue.
var errNoAnswer = fmt.Errorf("database unreachable: no answer within %s", probeTimeout)

// health is the watcher's verdict.
type health struct {
	mu sync.Mutex
	// watched: a watcher runs; without one, Ready probes itself.
	watched bool
	err     error
	// since is when the current outage began.
	since time.Time
	// migrated: no migration was pending at some probe; applied migrations
	// stay applied, so later probes skip the check.
	migrated bool
}

// watchHealth starts the watcher, which runs until the database is closed.
func (db *DB) watchHealth(log *slog.Logger) {
	var probe *sql.DB
	if db.connector != nil {
		// Postgres: a connection of the probe's own.
		probe = sql.OpenDB(db.connector)
		probe.SetMaxOpenConns(1)
	}
	db.listeners.Add(1)
	go func() {
		defer db.listeners.Done()
		db.watch(db.background, probe, log)
	}()
}

// watch probes the database until ctx ends, one probe at a time, keeping
// the verdict Ready answers and logging each outage's start and end once.
// probe is a pool of one connection for the probe, closed when the watch
// ends (nil: the database's own pools, for SQLite, whose reads never wait
// on a network).
func (db *DB) watch(ctx context.Context, probe *sql.DB, log *slog.Logger) {
	if probe != nil {
		defer func() { _ = probe.Close() }()
	}
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		answer := make(chan error, 1)
		go func() {
			pctx, cancel := context.WithTimeout(ctx, probeGiveUp)
			defer cancel()
			answer <- db.probe(pctx, probe)
		}()
		overdue := time.NewTimer(probeTimeout)
		var err error
		select {
		case err = <-answer:
		case <-overdue.C:
			db.record(errNoAnswer, log)
			err = <-answer
		}
		overdue.Stop()
		if ctx.Err() != nil {
			return
		}
		db.record(err, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe checks that the database answers and that its schema is current.
func (db *DB) probe(ctx context.Context, probe *sql.DB) error {
	var err error
	if probe != nil {
		_, err = probe.ExecContext(ctx, "SELECT 1")
	} else {
		err = db.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	db.health.mu.Lock()
	migrated := db.health.migrated
	db.health.mu.Unlock()
	if migrated {
		return nil
	}
	pending, err := db.PendingMigrations(ctx)
	if err != nil {
		return fmt.Errorf("read migration status: %w", err)
	}
	if len(pending) > 0 {
		return fmt.Errorf("%d migrations pending (run switchboard migrate)", len(pending))
	}
	db.health.mu.Lock()
	db.health.migrated = true
	db.health.mu.Unlock()
	return nil
}

// record keeps a probe's verdict and logs a change of it.
func (db *DB) record(err error, log *slog.Logger) {
	h := &db.health
	h.mu.Lock()
	wasDown, since := h.err != nil, h.since
	h.err = err
	h.watched = true
	if err != nil && !wasDown {
		h.since = time.Now()
	}
	h.mu.Unlock()
	switch {
	case err != nil && !wasDown:
		log.Warn("database unavailable: requests answer 503 until it returns", "error", err.Error())
	case err == nil && wasDown:
		log.Info("database available again", "outage", time.Since(since).Round(time.Millisecond).String())
	}
}

// Ready reports whether the database answers and its schema is current:
// the watcher's last verdict when one runs, else a probe made now.
func (db *DB) Ready(ctx context.Context) error {
	db.health.mu.Lock()
	watched, err := db.health.watched, db.health.err
	db.health.mu.Unlock()
	if watched {
		return err
	}
	return db.probe(ctx, nil)
}

// Available reports whether the last probe found the database answering;
// true before the watcher's first probe.
func (db *DB) Available() bool {
	db.health.mu.Lock()
	defer db.health.mu.Unlock()
	return db.health.err == nil
}
