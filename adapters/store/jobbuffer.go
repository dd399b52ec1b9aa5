package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Buffered enqueues.
//
// Inside a Postgres transaction, a job without a unique key cannot conflict
// with anything, so its INSERT need not run when it is enqueued: the row is
// kept with the transaction and written, together with the others of the
// transaction (of a whole shared batch, see shared.go), by one multi-row
// INSERT just before the commit. The caller still gets the job's id at once,
// from a block of ids taken from the table's identity sequence. A send then
// costs one statement less, and a batch of enqueues one statement instead of
// one each. Any other queue statement in the same transaction writes the
// buffer first, so the transaction always sees its own jobs.

// jobIDBlock is how many ids one trip to the sequence takes.
const jobIDBlock = 256

// jobIDs hands out ids reserved from the jobs identity sequence. Ids are
// unique but, across processes, not in commit order; nothing orders jobs by
// id alone (due work is ordered by run_at first).
type jobIDs struct {
	mu   sync.Mutex
	free []int64
}

func (p *jobIDs) next(ctx context.Context, db bun.IDB) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		var ids []int64
		// The sequence is looked up once (OFFSET 0 keeps the subquery from
		// being flattened), not once per id: pg_get_serial_sequence reads
		// the catalogs, and per row it cost more than the ids themselves.
		err := db.NewRaw(`SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence('jobs', 'id')::regclass AS seq OFFSET 0) AS s, generate_series(1, ?)`, jobIDBlock).Scan(ctx, &ids)
		if err != nil {
			return 0, fmt.Errorf("reserve job ids: %w", err)
		}
		p.free = ids
	}
	id := p.free[0]
	p.free = p.free[1:]
	return id, nil
}

// bufferedJob is a job waiting for its transaction's commit.
type bufferedJob struct {
	id          int64
	kind        string
	payload     []byte
	maxAttempts int
	paceKey     string
	accountID   string
	endpointKey string
	// runAt and createdAt are unix microseconds, as the table keeps them.
	runAt, createdAt int64
}

// bufferJob keeps a job for the commit when that is possible, and reports
// whether it did.
func (r *Repos) bufferJob(ctx context.Context, p jobs.EnqueueParams, payload []byte, maxAttempts int, runAt, now int64) (int64, bool, error) {
	if r.tx == nil || r.dialect != Postgres || p.UniqueKey != "" {
		return 0, false, nil
	}
	// Sequences are outside transactions: the pool serves, and a
	// transaction begun lazily (lazytx.go) is not begun for this.
	id, err := r.db.jobIDs.next(ctx, r.db.write)
	if err != nil {
		return 0, false, err
	}
	if r.tx.jobs == nil {
		r.tx.jobs = make([]bufferedJob, 0, max(1, r.tx.units))
	}
	r.tx.jobs = append(r.tx.jobs, bufferedJob{
		id: id, kind: p.Kind, payload: payload, maxAttempts: maxAttempts, paceKey: p.PaceKey,
		accountID: p.AccountID, endpointKey: p.EndpointKey,
		runAt: runAt, createdAt: now,
	})
	r.jobsEnqueued()
	return id, true, nil
}

// flushJobs writes the transaction's buffered jobs.
func (r *Repos) flushJobs(ctx context.Context) error {
	return runWrites(ctx, r.takeJobWrites())
}

// takeJobWrites returns the INSERT of the transaction's buffered jobs, and
// forgets them. The values are written into the statement as it is built,
// with the dialect's quoting, not bound: ten arguments a job, each boxed
// and formatted again by bun, cost more than the rest of the INSERT.
func (r *Repos) takeJobWrites() []*pendingWrite {
	if r.tx == nil || len(r.tx.jobs) == 0 {
		return nil
	}
	kept := r.tx.jobs
	r.tx.jobs = nil
	d := r.write.Dialect()
	q := make([]byte, 0, 128+192*len(kept))
	q = append(q, `INSERT INTO jobs (id, kind, state, payload, max_attempts, pace_key, endpoint_key, account_id, run_at, created_at) OVERRIDING SYSTEM VALUE VALUES `...)
	for i, j := range kept {
		if i > 0 {
			q = append(q, ", "...)
		}
		q = append(q, '(')
		q = strconv.AppendInt(q, j.id, 10)
		q = append(q, ", "...)
		q = d.AppendString(q, j.kind)
		q = append(q, ", "...)
		q = d.AppendString(q, string(jobs.StateAvailable))
		q = append(q, ", "...)
		q = d.AppendBytes(q, j.payload)
		q = append(q, ", "...)
		q = strconv.AppendInt(q, int64(j.maxAttempts), 10)
		for _, v := range [...]string{j.paceKey, j.endpointKey} {
			q = append(q, ", "...)
			if v == "" {
				q = append(q, "NULL"...)
			} else {
				q = d.AppendString(q, v)
			}
		}
		q = append(q, ", "...)
		q = d.AppendString(q, j.accountID)
		q = append(q, ", "...)
		q = strconv.AppendInt(q, j.runAt, 10)
		q = append(q, ", "...)
		q = strconv.AppendInt(q, j.createdAt, 10)
		q = append(q, ')')
	}
	// No arguments: bun runs the text as it is, a '?' in a value included.
	return []*pendingWrite{{
		query: r.write.NewRaw(string(q)),
		wrap:  func(err error) error { return fmt.Errorf("enqueue %d jobs: %w", len(kept), err) },
	}}
}
