package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Shared transactions (group commit).
//
// A send, an email or a delivery's outcome is a handful of short writes
// and a commit. Written one transaction each, concurrent callers pay a
// commit apiece (on Postgres a round trip and a WAL flush, on SQLite a
// disk sync), and the commits, not the statements, bound the throughput.
// DB.Commit lets concurrent callers share one instead: a few leader
// goroutines each take the batches waiting, merge them (writes.Merge)
// and write the merged batch with the same statements as one alone
// (commit.go).
//
// Only values are merged: no caller's code runs in the shared
// transaction. When it fails for a reason other than the database being
// away, each caller's batch is written again alone, so that the error
// (a taken Idempotency-Key) reaches only the caller whose batch caused it.

// maxSharedBatch bounds the units of one shared transaction, so that one
// batch holds its locks briefly and a failed batch costs little to redo.
const maxSharedBatch = 64

// sharedStall is how long a batch may run before waiting units start one
// beside it however few they are; a batch takes a few milliseconds.
const sharedStall = 20 * time.Millisecond

// errRunAlone tells a caller to write its batch alone.
var errRunAlone = errors.New("write the batch alone")

// sharedUnit is one caller's batch waiting to be written.
type sharedUnit struct {
	ctx   context.Context
	batch writes.Batch
	done  chan error
}

// committer batches units into shared transactions.
type committer struct {
	db *DB
	// maxLeaders bounds the transactions running at once (1 on SQLite,
	// which has one writer); maxBatch bounds the units in one.
	maxLeaders, maxBatch int
	// quorum is how many units must wait before a batch starts beside a
	// running one, and stall how long a running batch may take before
	// any waiting unit starts one (see mayOverlap).
	quorum int
	stall  time.Duration

	mu    sync.Mutex
	queue []*sharedUnit
	// leaders counts the goroutines leading batches and running the
	// batches being executed; started is when the newest of those began.
	leaders, running int
	started          time.Time
	// recheck, while armed, starts a leader for units left waiting behind
	// a batch that stalls (see startOrWait).
	recheck *time.Timer
	stats   SharedStats
}

// SharedStats counts the work of shared transactions.
type SharedStats struct {
	// Waiting is the number of units queued for a batch now, Writing the
	// number of batches being written.
	Waiting, Writing int
	// Batches and Units count the batches committed and their units;
	// Redone counts the units run again alone after their batch failed.
	Batches, Units, Redone int64
}

// SharedStats reports the shared transactions so far.
func (db *DB) SharedStats() SharedStats {
	c := db.shared
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Waiting, s.Writing = len(c.queue), c.running
	return s
}

// newCommitter returns a committer; a quorum or stall of 0 picks half a
// batch and sharedStall.
func newCommitter(db *DB, maxLeaders, maxBatch, quorum int, stall time.Duration) *committer {
	maxBatch = max(1, maxBatch)
	if quorum <= 0 {
		quorum = max(1, maxBatch/2)
	}
	if stall <= 0 {
		stall = sharedStall
	}
	return &committer{db: db, maxLeaders: max(1, maxLeaders), maxBatch: maxBatch, quorum: quorum, stall: stall}
}

// commit writes b with the batches of concurrent callers, or alone when
// their shared transaction failed.
func (c *committer) commit(ctx context.Context, b writes.Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	u := &sharedUnit{ctx: ctx, batch: b, done: make(chan error, 1)}
	c.submit(u)
	// A caller out of time stops waiting: its batch may still commit, as
	// a transaction whose COMMIT reply is lost may, and the caller's
	// answer (unavailable) says that the outcome is unknown.
	select {
	case err := <-u.done:
		if !errors.Is(err, errRunAlone) {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.db.commitAlone(ctx, b)
}

func (c *committer) submit(u *sharedUnit) {
	c.mu.Lock()
	c.queue = append(c.queue, u)
	c.startOrWait(time.Now())
	c.mu.Unlock()
}

// startOrWait starts a leader for the waiting units if none runs, or if
// they may start a batch beside the running ones (mayOverlap answers yes
// when no batch runs); otherwise it makes sure they are looked at again
// should the newest running batch stall (c.mu held).
func (c *committer) startOrWait(now time.Time) {
	switch {
	case c.leaders < c.maxLeaders && c.mayOverlap(now):
		c.leaders++
		go c.lead()
	case c.recheck == nil && c.leaders < c.maxLeaders:
		c.recheck = time.AfterFunc(c.stall-now.Sub(c.started), c.lookAgain)
	}
}

// lookAgain runs when units may have waited for a stalled batch.
func (c *committer) lookAgain() {
	c.mu.Lock()
	c.recheck = nil
	if len(c.queue) > 0 {
		c.startOrWait(time.Now())
	}
	c.mu.Unlock()
}

// mayOverlap reports whether the waiting units should start a batch beside
// the running ones rather than wait for one of them to end (c.mu held).
//
// It does when no batch runs, when a quorum of units waits, or when the
// running batch has run for the stall time (a lock wait, say). Every batch
// costs a round trip, a commit and, on the database, the parsing and
// planning of its statements, whatever its size, so a unit costs less in a
// larger batch. The quorum keeps the database busy when arrivals outgrow
// one batch at a time without splitting them into many small batches. The
// stall time keeps one slow batch from holding up the others.
// bench/RESULTS.md holds the measurements behind the default quorum, half
// a batch.
func (c *committer) mayOverlap(now time.Time) bool {
	return c.running == 0 || len(c.queue) >= c.quorum || now.Sub(c.started) >= c.stall
}

// lead runs batches while units wait that no other leader takes soon
// enough (mayOverlap).
func (c *committer) lead() {
	c.mu.Lock()
	for {
		n := min(len(c.queue), c.maxBatch)
		now := time.Now()
		if n == 0 || !c.mayOverlap(now) {
			// The running leaders take the waiting units when their
			// batches end.
			c.leaders--
			c.mu.Unlock()
			return
		}
		batch := make([]*sharedUnit, n)
		copy(batch, c.queue)
		clear(c.queue[:n])
		c.queue = c.queue[n:]
		c.running++
		c.started = now
		c.mu.Unlock()
		c.run(batch)
		c.mu.Lock()
		c.running--
	}
}

// run writes one merged batch. A unit whose caller has gone is answered
// with its context's error and left out.
func (c *committer) run(batch []*sharedUnit) {
	live := batch[:0]
	for _, u := range batch {
		if err := u.ctx.Err(); err != nil {
			u.done <- err
			continue
		}
		live = append(live, u)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		// Alone already: its outcome is its caller's.
		live[0].done <- c.db.commitAlone(live[0].ctx, live[0].batch)
		c.countBatch(1)
		return
	}
	batches := make([]writes.Batch, len(live))
	for i, u := range live {
		batches[i] = u.batch
	}
	merged := writes.Merge(batches)
	// Cancelling one caller must not abort the others' work, so the
	// transaction has no caller's cancellation, but it ends by the latest
	// of their deadlines: past it, nobody waits for its outcome. The
	// reactions run once, for the merged batch.
	ctx, cancel := batchContext(live)
	defer cancel()
	err := c.db.react(ctx, c.db.base, &merged)
	if err == nil {
		err = c.db.writeBatch(ctx, merged)
	}
	if err != nil && failure.Is(err, failure.KindUnavailable) {
		// The database is away or its answer was lost: the batch may have
		// committed, and writing the batches again could do their work
		// twice. Each caller learns that the outcome is unknown.
		for _, u := range live {
			u.done <- err
		}
		return
	}
	if err != nil {
		c.countRedone(len(live))
		for _, u := range live {
			u.done <- errRunAlone
		}
		return
	}
	c.countBatch(len(live))
	for _, u := range live {
		u.done <- nil
	}
}

// batchContext returns the context of a batch's transaction (see
// sharedContext).
func batchContext(live []*sharedUnit) (context.Context, context.CancelFunc) {
	ctxs := make([]context.Context, len(live))
	for i, u := range live {
		ctxs[i] = u.ctx
	}
	return sharedContext(ctxs)
}

// sharedContext returns the context of work done for several callers:
// without their cancellation, with the latest of their deadlines when all
// have one.
func sharedContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(ctxs[0])
	var latest time.Time
	for _, c := range ctxs {
		d, ok := c.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

func (c *committer) countBatch(units int) {
	c.mu.Lock()
	c.stats.Batches++
	c.stats.Units += int64(units)
	c.mu.Unlock()
}

func (c *committer) countRedone(units int) {
	c.mu.Lock()
	c.stats.Redone += int64(units)
	c.mu.Unlock()
}
