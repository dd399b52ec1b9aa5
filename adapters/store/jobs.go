package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/queue"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// JobQueue is the durable job queue: enqueueing, leased claims, retries,
// and the operator's view of dead jobs. It implements the runner's Queue.
type JobQueue struct{ *Conn }

// JobQueue is db's job queue, outside any transaction.
func (db *DB) JobQueue() JobQueue { return JobQueue{db.base} }

// micros is the queue's time format: unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// jobColumns are what a claimed job carries to its handler.
const jobColumns = "id, kind, payload, attempt, max_attempts, unique_key, pace_key, account_id, endpoint_key, run_at, created_at, interruptions, interrupted_at"

type jobRow struct {
	ID          int64          `bun:"id"`
	Kind        string         `bun:"kind"`
	Payload     []byte         `bun:"payload"`
	Attempt     int            `bun:"attempt"`
	MaxAttempts int            `bun:"max_attempts"`
	UniqueKey   sql.NullString `bun:"unique_key"`
	PaceKey     sql.NullString `bun:"pace_key"`
	AccountID   string         `bun:"account_id"`
	EndpointKey sql.NullString `bun:"endpoint_key"`
	RunAt       int64          `bun:"run_at"`
	CreatedAt   int64          `bun:"created_at"`
	// Interruptions and InterruptedAt: see jobs.Job.Interrupted.
	Interruptions int           `bun:"interruptions"`
	InterruptedAt sql.NullInt64 `bun:"interrupted_at"`
}

func (r jobRow) job() jobs.Job {
	return jobs.Job{
		ID: r.ID, Kind: r.Kind, Payload: r.Payload, Attempt: r.Attempt, MaxAttempts: r.MaxAttempts,
		UniqueKey: r.UniqueKey.String, PaceKey: r.PaceKey.String,
		AccountID: r.AccountID, EndpointKey: r.EndpointKey.String,
		RunAt: fromMicros(r.RunAt), CreatedAt: fromMicros(r.CreatedAt),
		Interrupted: r.Interruptions, InterruptedAt: microsOrZero(r.InterruptedAt),
	}
}

// microsOrZero is a nullable time: zero when NULL.
func microsOrZero(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return fromMicros(us.Int64)
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// EnqueueJob adds a job. Called on transaction repositories it commits with
// the transaction (and wakes the runners after the commit); called outside
// one it is its own statement. With a UniqueKey that a pending or running
// job already has, nothing is added and that job's id is returned.
func (r JobQueue) EnqueueJob(ctx context.Context, p jobs.EnqueueParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	now := r.clock()
	runAt := p.RunAt
	if runAt.IsZero() {
		runAt = now
	}
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = jobs.DefaultMaxAttempts
	}
	payload := p.Payload
	if payload == nil {
		payload = []byte{}
	}
	var ids []int64
	err := r.write.NewRaw(
		`INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key, account_id, endpoint_key, run_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`,
		p.Kind, jobs.StateAvailable, payload, maxAttempts, nullable(p.UniqueKey), nullable(p.PaceKey),
		p.AccountID, nullable(p.EndpointKey), micros(runAt), micros(now),
	).Scan(ctx, &ids)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", p.Kind, err)
	}
	r.jobsEnqueued()
	if len(ids) == 1 {
		return ids[0], nil
	}
	var id int64
	err = r.write.NewRaw(
		`SELECT id FROM jobs WHERE unique_key = ? AND state IN (?) LIMIT 1`,
		p.UniqueKey, bun.List(pendingOrRunning),
	).Scan(ctx, &id)
	if err != nil {
		return 0, fmt.Errorf("find job with unique key %q: %w", p.UniqueKey, err)
	}
	return id, nil
}

var (
	pending          = []jobs.State{jobs.StateAvailable, jobs.StateRetryable}
	pendingOrRunning = []jobs.State{jobs.StateAvailable, jobs.StateRetryable, jobs.StateRunning}
)

// CancelJobs cancels the pending job with the unique key, if any; a running
// job finishes its attempt but is not retried. It returns how many jobs it
// cancelled.
func (r JobQueue) CancelJobs(ctx context.Context, uniqueKey string) (int, error) {
	now := micros(r.clock())
	res, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, finished_at = ?, unique_key = NULL WHERE unique_key = ? AND state IN (?)`,
		jobs.StateCancelled, now, uniqueKey, bun.List(pending),
	).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("cancel jobs: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// RenewLeases is the heartbeat of a runner: it extends the leases worker
// still holds among ids, each to its kind's lease end, in one statement,
// and returns the ids it renewed. An id it does not return is no longer
// worker's: finished, or rescued after its lease expired (and perhaps
// running elsewhere).
func (r JobQueue) RenewLeases(ctx context.Context, worker string, ids []int64, leases []jobs.Lease) ([]int64, error) {
	if len(ids) == 0 || len(leases) == 0 {
		return nil, nil
	}
	until, untilArgs := leaseUntil(leases)
	// A renewal only extends: one whose statement commits late (its
	// caller gave up waiting on a busy machine) must not shorten the
	// lease a later renewal set.
	extend := "GREATEST"
	if r.dialect == SQLite {
		extend = "MAX"
	}
	args := append(untilArgs, bun.List(ids), worker, jobs.StateRunning, bun.List(leaseKinds(leases)))
	var renewed []int64
	err := r.write.NewRaw(
		`UPDATE jobs SET lease_expires_at = `+extend+`(lease_expires_at, `+until+`)
		WHERE id IN (?) AND lease_owner = ? AND state = ? AND kind IN (?) RETURNING id`,
		args...,
	).Scan(ctx, &renewed)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("renew job leases: %w", err)
	}
	return renewed, nil
}

// leaseUntil is the SQL expression of each kind's lease end, with its
// arguments: a constant when every kind ends at once.
func leaseUntil(leases []jobs.Lease) (string, []any) {
	same := true
	for _, l := range leases[1:] {
		same = same && l.Until.Equal(leases[0].Until)
	}
	if same {
		return "?", []any{micros(leases[0].Until)}
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(leases))
	b.WriteString("CASE kind")
	for _, l := range leases {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, l.Kind, micros(l.Until))
	}
	b.WriteString(" END")
	return b.String(), args
}

func leaseKinds(leases []jobs.Lease) []string {
	kinds := make([]string, len(leases))
	for i, l := range leases {
		kinds[i] = l.Kind
	}
	return kinds
}

// outcomeRecorded is what recording a job's outcome sets besides: the
// handler has told of the runs cut off before (jobs.Job.Interrupted).
const outcomeRecorded = "interruptions = 0, interrupted_at = NULL"

// CompleteJobs marks jobs done, if worker still holds their leases; a job
// whose lease was lost (and may be running elsewhere) is left alone.
func (r JobQueue) CompleteJobs(ctx context.Context, worker string, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	var err error
	if r.dialect == Postgres {
		// One prepared statement whatever the number of ids (see
		// newByIDs), on the read pool, which on Postgres is the writer.
		var rows *sql.Rows
		if rows, err = r.prepared(ctx, completeJobsPostgres, string(jobs.StateCompleted), micros(now), jsonList(ids), worker, string(jobs.StateRunning)); err == nil {
			err = rows.Close()
		}
	} else {
		_, err = r.write.NewRaw(
			`UPDATE jobs SET state = ?, finished_at = ?, `+leaseReleased+`
			WHERE id IN (?) AND lease_owner = ? AND state = ?`,
			jobs.StateCompleted, micros(now), bun.List(ids), worker, jobs.StateRunning,
		).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("complete jobs: %w", err)
	}
	return nil
}

// leaseReleased is what a job its worker finished (completed or dead) no
// longer holds.
const leaseReleased = "lease_owner = NULL, lease_expires_at = NULL, unique_key = NULL, " + outcomeRecorded

// completeJobsPostgres is CompleteJobs on Postgres, the ids a JSON list.
const completeJobsPostgres = `UPDATE jobs SET state = $1, finished_at = $2, ` + leaseReleased + `
	WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($3::jsonb)::bigint)) AND lease_owner = $4 AND state = $5`

// RetryJob schedules the next attempt of a job worker holds.
func (r JobQueue) RetryJob(ctx context.Context, worker string, id int64, runAt time.Time, lastErr string) error {
	_, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, run_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL, `+outcomeRecorded+`
		WHERE id = ? AND lease_owner = ? AND state = ?`,
		jobs.StateRetryable, micros(runAt), truncateError(lastErr), id, worker, jobs.StateRunning,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("retry job %d: %w", id, err)
	}
	r.jobsEnqueued()
	return nil
}

// SnoozeJob puts a job worker holds back without counting the attempt: the
// runner did not start it (its pace key was over its limit).
func (r JobQueue) SnoozeJob(ctx context.Context, worker string, id int64, runAt time.Time) error {
	_, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, run_at = ?, attempt = attempt - 1, lease_owner = NULL, lease_expires_at = NULL
		WHERE id = ? AND lease_owner = ? AND state = ?`,
		jobs.StateAvailable, micros(runAt), id, worker, jobs.StateRunning,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("snooze job %d: %w", id, err)
	}
	r.jobsEnqueued()
	return nil
}

// ReleaseJobs puts jobs that worker claimed and did not start back in the
// queue as they were: due when they were (so in their place), their
// attempt given back.
func (r JobQueue) ReleaseJobs(ctx context.Context, worker string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, attempt = attempt - 1, lease_owner = NULL, lease_expires_at = NULL
		WHERE id IN (?) AND lease_owner = ? AND state = ?`,
		jobs.StateAvailable, bun.List(ids), worker, jobs.StateRunning,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release jobs: %w", err)
	}
	r.jobsEnqueued()
	return nil
}

// KillJob marks a job worker holds dead, keeping its last error.
func (r JobQueue) KillJob(ctx context.Context, worker string, id int64, now time.Time, lastErr string) error {
	_, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, finished_at = ?, last_error = ?, `+leaseReleased+`
		WHERE id = ? AND lease_owner = ? AND state = ?`,
		jobs.StateDead, micros(now), truncateError(lastErr), id, worker, jobs.StateRunning,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("kill job %d: %w", id, err)
	}
	return nil
}

// RescueJobs returns jobs whose lease expired (their worker crashed or hung)
// to the queue. A job whose last attempt was lost this way gets one more, so
// that its handler can record the failure on the business row (a message
// marked failed); only when that is lost too is the job marked dead. It
// returns how many it rescued and killed.
func (r JobQueue) RescueJobs(ctx context.Context, now time.Time) (rescued, killed int, err error) {
	const lost = "lease expired: the worker stopped or hung"
	res, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, finished_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL, unique_key = NULL
		WHERE state = ? AND lease_expires_at < ? AND attempt > max_attempts`,
		jobs.StateDead, micros(now), lost, jobs.StateRunning, micros(now),
	).Exec(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("kill expired jobs: %w", err)
	}
	k, _ := res.RowsAffected()
	res, err = r.write.NewRaw(
		`UPDATE jobs SET state = ?, run_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL
		WHERE state = ? AND lease_expires_at < ?`,
		jobs.StateRetryable, micros(now), lost, jobs.StateRunning, micros(now),
	).Exec(ctx)
	if err != nil {
		return 0, int(k), fmt.Errorf("rescue expired jobs: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		r.jobsEnqueued()
	}
	return int(n), int(k), nil
}

// RescueDeadWorkers returns to the queue at once the running jobs whose
// worker is a registered process known dead (see RegisterProcess): their
// run was cut off, not failed. Each job is due when it was (so in its
// place, whatever the clocks of the replicas say), counts one more
// interruption (jobs.Job.Interrupted) and gets its attempt back; past
// jobs.MaxInterruptions in a row the attempt counts, as a lease's expiry
// counts it (a job out of attempts is dead). It returns how many it
// rescued and killed. Jobs of a worker that is alive, or not registered,
// wait for their leases (RescueJobs).
func (r JobQueue) RescueDeadWorkers(ctx context.Context, now time.Time) (rescued, killed int, err error) {
	const interrupted = "interrupted: its process died"
	var states []jobs.State
	// One statement: the processes known dead are read as it runs. SET
	// expressions read the row as it was.
	err = r.write.NewRaw(`UPDATE jobs SET
			state = CASE WHEN interruptions < ? THEN ? WHEN attempt > max_attempts THEN ? ELSE ? END,
			attempt = CASE WHEN interruptions < ? THEN attempt - 1 ELSE attempt END,
			last_error = CASE WHEN interruptions < ? THEN last_error ELSE ? END,
			finished_at = CASE WHEN interruptions >= ? AND attempt > max_attempts THEN ? ELSE finished_at END,
			unique_key = CASE WHEN interruptions >= ? AND attempt > max_attempts THEN NULL ELSE unique_key END,
			interruptions = interruptions + 1, interrupted_at = attempted_at,
			lease_owner = NULL, lease_expires_at = NULL
		WHERE state = ? AND lease_owner IN (`+r.db.deadProcesses+`) RETURNING state`,
		jobs.MaxInterruptions, jobs.StateAvailable, jobs.StateDead, jobs.StateRetryable,
		jobs.MaxInterruptions,
		jobs.MaxInterruptions, interrupted,
		jobs.MaxInterruptions, micros(now),
		jobs.MaxInterruptions,
		jobs.StateRunning,
	).Scan(ctx, &states)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("rescue the jobs of dead processes: %w", err)
	}
	for _, s := range states {
		if s == jobs.StateDead {
			killed++
		} else {
			rescued++
		}
	}
	if rescued > 0 {
		r.jobsEnqueued()
	}
	return rescued, killed, nil
}

// PruneJobs deletes up to limit completed and cancelled jobs of the kinds
// that finished before the cutoff, and returns how many it deleted; dead
// jobs stay until re-run.
func (r JobQueue) PruneJobs(ctx context.Context, kinds []string, before time.Time, limit int) (int, error) {
	res, err := r.write.NewRaw(
		`DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN (?) AND finished_at < ? AND kind IN (?) LIMIT ?)`,
		bun.List([]jobs.State{jobs.StateCompleted, jobs.StateCancelled}), micros(before), bun.List(kinds), limit,
	).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune jobs: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// NextJobAt is when the earliest pending job of the kinds becomes due
// (zero when none is pending), so an idle runner can sleep until then.
// Each kind's earliest is one probe of jobs_due_kind, however many jobs of
// other kinds are pending.
func (r JobQueue) NextJobAt(ctx context.Context, kinds []string) (time.Time, error) {
	if len(kinds) == 0 {
		return time.Time{}, nil
	}
	if r.dialect == Postgres {
		// A prepared statement whatever the kinds: an idle runner asks
		// after most claims that come back short, and a statement written
		// for its kinds took Postgres longer to plan than to run.
		var rows []struct {
			M sql.NullInt64 `bun:"m"`
		}
		if err := r.selectAll(ctx, &rows, nextJobAtPostgres, jsonList(kinds)); err != nil {
			return time.Time{}, fmt.Errorf("next job time: %w", err)
		}
		if len(rows) != 1 {
			return time.Time{}, nil
		}
		return microsOrZero(rows[0].M), nil
	}
	var next sql.NullInt64
	var q strings.Builder
	args := make([]any, len(kinds))
	q.WriteString(`SELECT MIN(m) FROM (`)
	for i, k := range kinds {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(`SELECT (SELECT run_at FROM jobs WHERE kind = ? AND state IN (` + pendingSQL + `) ORDER BY run_at LIMIT 1) AS m`)
		args[i] = k
	}
	q.WriteString(`) firsts`)
	if err := r.read.NewRaw(q.String(), args...).Scan(ctx, &next); err != nil {
		return time.Time{}, fmt.Errorf("next job time: %w", err)
	}
	return microsOrZero(next), nil
}

// nextJobAtPostgres is NextJobAt on Postgres: each kind of the JSON list
// $1 is one probe of jobs_due_kind.
const nextJobAtPostgres = `SELECT MIN(f.run_at) AS m FROM jsonb_array_elements_text($1::jsonb) k(kind)
	CROSS JOIN LATERAL (SELECT run_at FROM jobs WHERE kind = k.kind AND state IN (` + pendingSQL + `) ORDER BY run_at LIMIT 1) f`

// DeadJob is a job that ran out of attempts, with why.
type DeadJob struct {
	jobs.Job
	LastError  string
	FinishedAt time.Time
}

// DeadJobs lists dead jobs, newest first, optionally of one kind.
func (r JobQueue) DeadJobs(ctx context.Context, kind string, limit int) ([]DeadJob, error) {
	q := r.read.NewSelect().TableExpr("jobs").
		ColumnExpr(jobColumns+", last_error, finished_at").
		Where("state = ?", jobs.StateDead).OrderExpr("id DESC").Limit(limit)
	if kind != "" {
		q = q.Where("kind = ?", kind)
	}
	var rows []struct {
		jobRow
		LastError  sql.NullString `bun:"last_error"`
		FinishedAt sql.NullInt64  `bun:"finished_at"`
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list dead jobs: %w", err)
	}
	out := make([]DeadJob, len(rows))
	for i, row := range rows {
		out[i] = DeadJob{Job: row.job(), LastError: row.LastError.String, FinishedAt: fromMicros(row.FinishedAt.Int64)}
	}
	return out, nil
}

// RerunJob makes a dead job pending again with a fresh set of attempts.
func (r JobQueue) RerunJob(ctx context.Context, id int64) error {
	res, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, attempt = 0, run_at = ?, finished_at = NULL WHERE id = ? AND state = ?`,
		jobs.StateAvailable, micros(r.clock()), id, jobs.StateDead,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("re-run job %d: %w", id, err)
	}
	if err := requireOneRow(res, "dead job"); err != nil {
		return err
	}
	r.jobsEnqueued()
	return nil
}

// JobStats summarises the queue for metrics.
func (r JobQueue) JobStats(ctx context.Context, now time.Time) ([]jobs.Stat, error) {
	var rows []jobStatRow
	n := micros(now)
	err := r.read.NewRaw(
		`SELECT kind,
			SUM(CASE WHEN state IN (?) AND run_at <= ? THEN 1 ELSE 0 END) AS ready,
			SUM(CASE WHEN state IN (?) AND run_at > ? THEN 1 ELSE 0 END) AS scheduled,
			SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS running,
			MIN(CASE WHEN state IN (?) AND run_at <= ? THEN run_at END) AS oldest
		FROM jobs WHERE state IN (?) GROUP BY kind ORDER BY kind`,
		bun.List(pending), n, bun.List(pending), n, jobs.StateRunning, bun.List(pending), n, bun.List(pendingOrRunning),
	).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("job stats: %w", err)
	}
	return jobStatsOf(rows), nil
}

// jobStatRow is a kind's line of a stats read; a read that does not
// count retrying or dead jobs leaves them zero.
type jobStatRow struct {
	Kind      string        `bun:"kind"`
	Ready     int           `bun:"ready"`
	Scheduled int           `bun:"scheduled"`
	Running   int           `bun:"running"`
	Retrying  int           `bun:"retrying"`
	Dead      int           `bun:"dead"`
	Oldest    sql.NullInt64 `bun:"oldest"`
}

func jobStatsOf(rows []jobStatRow) []jobs.Stat {
	out := make([]jobs.Stat, len(rows))
	for i, row := range rows {
		out[i] = jobs.Stat{Kind: row.Kind, Ready: row.Ready, Scheduled: row.Scheduled, Running: row.Running, Retrying: row.Retrying, Dead: row.Dead}
		if row.Oldest.Valid {
			out[i].OldestReady = fromMicros(row.Oldest.Int64)
		}
	}
	return out
}

var _ queue.Store = JobQueue{}

// AccountJobStats summarises one account's jobs for its console: per
// kind, the pending (due or scheduled, and how many of them retry), the
// running and the dead; one statement on the account's jobs.
func (r JobQueue) AccountJobStats(ctx context.Context, accountID string, now time.Time) ([]jobs.Stat, error) {
	var rows []jobStatRow
	n := micros(now)
	err := r.read.NewRaw(
		`SELECT kind,
			SUM(CASE WHEN state IN (?) AND run_at <= ? THEN 1 ELSE 0 END) AS ready,
			SUM(CASE WHEN state IN (?) AND run_at > ? THEN 1 ELSE 0 END) AS scheduled,
			SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS running,
			SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS retrying,
			SUM(CASE WHEN state = ? THEN 1 ELSE 0 END) AS dead,
			MIN(CASE WHEN state IN (?) AND run_at <= ? THEN run_at END) AS oldest
		FROM jobs WHERE account_id = ? AND state IN (?) GROUP BY kind ORDER BY kind`,
		bun.List(pending), n, bun.List(pending), n, jobs.StateRunning, jobs.StateRetryable, jobs.StateDead, bun.List(pending), n,
		accountID, bun.List(append(slices.Clone(pendingOrRunning), jobs.StateDead)),
	).Scan(ctx, &rows)
	if err != nil {
		return nil, translate(err, "job")
	}
	return jobStatsOf(rows), nil
}

// truncateError keeps stored errors bounded.
func truncateError(s string) string {
	const max = 2000
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
