// Package outage paces and reports the background loops that depend on the
// database (the job runner's claims, the cron scheduler, the live event
// reader, job notifications) while it is away. Such a loop fails on every
// attempt for as long as the outage lasts: logged per attempt, a 30-second
// outage wrote thousands of identical lines, and retried at its usual
// rhythm, it hammers a database that is coming back up.
package outage

import (
	"log/slog"
	"sync"
	"time"
)

// Tracker follows one loop's failures: the first failure after a success is
// logged once, later ones are counted, and the first success after them
// logs how long the outage lasted and how many attempts failed. Failed
// answers how long to wait before the next attempt, doubling from the
// loop's own interval up to a ceiling. Safe for concurrent use.
type Tracker struct {
	log        *slog.Logger
	what       string
	base, ceil time.Duration
	now        func() time.Time

	mu       sync.Mutex
	failures int
	since    time.Time
}

// DefaultCeiling is the longest wait between attempts during an outage:
// short enough that work resumes within seconds of the database's return.
const DefaultCeiling = 2 * time.Second

// NewTracker returns a tracker for the loop named what (e.g. "claim jobs"),
// whose usual wait between attempts is base; waits grow to ceil (a ceil
// of 0 is DefaultCeiling).
func NewTracker(log *slog.Logger, what string, base, ceil time.Duration) *Tracker {
	if log == nil {
		log = slog.Default()
	}
	if ceil <= 0 {
		ceil = DefaultCeiling
	}
	return &Tracker{log: log, what: what, base: max(base, time.Millisecond), ceil: max(ceil, base), now: time.Now}
}

// Failed records a failed attempt and returns the wait before the next one.
func (t *Tracker) Failed(err error) time.Duration {
	t.mu.Lock()
	t.failures++
	n := t.failures
	if n == 1 {
		t.since = t.now()
	}
	t.mu.Unlock()
	if n == 1 {
		t.log.Warn(t.what+" failed; retrying with back-off until it succeeds", "error", err.Error())
	}
	return Backoff(n, t.base, t.ceil)
}

// Backoff is the wait after the nth consecutive failure (1-based): base,
// doubling with each failure, at most ceil.
func Backoff(n int, base, ceil time.Duration) time.Duration {
	wait := base
	for i := 1; i < n && wait < ceil; i++ {
		wait *= 2
	}
	return min(wait, ceil)
}

// Succeeded records a successful attempt, ending an outage if one ran.
func (t *Tracker) Succeeded() {
	t.mu.Lock()
	n, since := t.failures, t.since
	t.failures = 0
	t.mu.Unlock()
	if n > 0 {
		t.log.Info(t.what+" works again", "failed_attempts", n, "outage", t.now().Sub(since).Round(time.Millisecond).String())
	}
}

// Down reports whether the last attempt failed.
func (t *Tracker) Down() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failures > 0
}
