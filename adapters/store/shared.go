package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Shared transactions (group commit).
//
// A send, an inbound message or an enqueue is a handful of short statements
// and a commit. Run one transaction each, concurrent callers pay a BEGIN
// and a COMMIT round trip apiece, and on SQLite a disk sync apiece, and the
// commits, not the statements, bound the throughput. TransactShared lets
// concurrent callers share one database transaction instead: a few leader
// goroutines each take whatever units are waiting, run them one after the
// other in one transaction, and commit them together.
//
// The contract that keeps this correct: a caller's outcome is either that
// of a batch in which every unit succeeded and which committed, or that of
// its own transaction. When any unit of a batch fails (returns an error,
// panics, or its statement aborts the transaction) or the commit fails, the
// batch is rolled back and every one of its units runs again, alone, in its
// caller's goroutine, exactly as Transact would run it. So a unit can run
// twice, and must have no effect outside the repositories it is given;
// units that call providers or other services use Transact.

// maxSharedBatch bounds the units of one shared transaction, so that one
// batch holds its locks briefly and a failed batch costs little to redo.
const maxSharedBatch = 64

// sharedStall is how long a batch may run before waiting units start one
// beside it however few they are; a batch takes a few milliseconds.
const sharedStall = 20 * time.Millisecond

// errRunAlone tells a caller to run its unit in its own transaction.
var errRunAlone = errors.New("run the unit in its own transaction")

// sharedUnit is one caller's work waiting for a batch.
type sharedUnit struct {
	ctx  context.Context
	fn   func(ctx context.Context, r *Repos) error
	done chan error
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
	// Waiting is the number of units queued for a batch now.
	Waiting int
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
	s.Waiting = len(c.queue)
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

// TransactShared runs fn in a transaction that it may share with
// concurrent callers (see above): fn must touch nothing but r, and may run
// more than once. It returns fn's error, or the transaction's.
func (db *DB) TransactShared(ctx context.Context, fn func(ctx context.Context, r *Repos) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u := &sharedUnit{ctx: ctx, fn: fn, done: make(chan error, 1)}
	db.shared.submit(u)
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
	return db.Transact(ctx, fn)
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
// Every batch costs a round trip, a commit and, on the database, the
// parsing and planning of its statements, whatever its size. Leaders that
// start as soon as a unit waits split the units into many small batches:
// with 64 clients sending emails, two such leaders made batches of 14
// units, one leader batches of 28, and the larger batches cost Postgres
// 12 µs less per email (the server 8 µs less). So a batch starts beside a
// running one for a quorum of units, which keeps the database busy when
// arrivals outgrow one batch at a time, or once the running batch has
// stalled (a lock wait), so that one slow batch does not hold up others.
// Against 64 clients in alternating runs, a quorum of half a batch (32)
// accepted 2-5% more emails and sends than a quarter; a quorum of a whole
// batch 12-16% fewer, one leader alone 3% fewer.
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

// errUnitFailed rolls a batch back when one of its units failed.
var errUnitFailed = errors.New("a unit of the shared transaction failed")

// run executes one batch. A unit whose caller has gone is answered with
// its context's error and left out.
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
	state := &txState{units: len(live)}
	// Cancelling one caller must not abort the others' work, so the
	// transaction has no caller's cancellation, but it ends by the latest
	// of their deadlines: past it, nobody waits for its outcome.
	ctx, cancel := batchContext(live)
	defer cancel()
	var err error
	if c.db.dialect == Postgres {
		err = c.runLazily(ctx, state, live)
	} else {
		err = c.db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			r := &Repos{read: tx, write: tx, dialect: c.db.dialect, scanner: c.db.write, db: c.db, tx: state}
			if err := runUnits(live, r); err != nil {
				return err
			}
			return r.flushPending(ctx)
		})
	}
	c.db.afterCommit(state, err)
	if err != nil && failure.Is(err, failure.KindUnavailable) {
		// The database is away or its answer was lost: the batch may have
		// committed, and running its units again could do their work
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

// batchContext returns the context of a batch's transaction: without the
// units' cancellation, with the latest of their deadlines when all have
// one.
func batchContext(live []*sharedUnit) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(live[0].ctx)
	var latest time.Time
	for _, u := range live {
		d, ok := u.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// runLazily runs a batch in a transaction begun by its first statement
// that cannot wait for the commit (lazytx.go).
func (c *committer) runLazily(ctx context.Context, state *txState, live []*sharedUnit) error {
	tx := newLazyTx(ctx, c.db.write)
	r := &Repos{read: tx, write: tx, dialect: c.db.dialect, scanner: c.db.write, db: c.db, tx: state}
	if err := runUnits(live, r); err != nil {
		tx.rollback()
		return err
	}
	return tx.commit(ctx, r.takePendingWrites())
}

// runUnits runs a batch's units one after the other on r.
func runUnits(live []*sharedUnit, r *Repos) error {
	for _, u := range live {
		if err := runUnit(u, r); err != nil {
			return err
		}
	}
	return nil
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

// runUnit runs one unit on the shared repositories, turning its failure or
// panic into errUnitFailed.
func runUnit(u *sharedUnit, r *Repos) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: panic: %v", errUnitFailed, p)
		}
	}()
	if err := u.fn(u.ctx, r); err != nil {
		return fmt.Errorf("%w: %w", errUnitFailed, err)
	}
	return nil
}

// TransactShared runs fn with the consumer's repositories in a
// transaction it may share with concurrent callers; see DB.TransactShared.
func (b Bound[R]) TransactShared(ctx context.Context, fn func(ctx context.Context, r R) error) error {
	return b.db.TransactShared(ctx, func(ctx context.Context, r *Repos) error { return fn(ctx, b.view(r)) })
}
