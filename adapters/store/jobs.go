package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
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

// ClaimJobs leases up to limit due jobs of the leases' kinds to worker,
// each until its kind's lease ends, and returns them with their attempt
// counted. The filter shares the claim across accounts (see
// jobs.ClaimFilter): the accounts with pending jobs are visited one index
// probe each (jobs_due_account), each gives its oldest due jobs up to its
// ceiling's room, and the claim takes those within each account's share
// first, in turns (each account's oldest, then each one's second, ...),
// then the borrowed rest the same way; no more of an endpoint's jobs than
// its room. On Postgres this is one statement, and concurrent claimers
// skip each other's rows (SKIP LOCKED);
// on SQLite, under its single writer, the jobs are picked from the same
// reads in Go and then taken if still pending.
func (r JobQueue) ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, f jobs.ClaimFilter) ([]jobs.Job, error) {
	if len(leases) == 0 || limit <= 0 {
		return nil, nil
	}
	c := newClaim(leases, limit, now, f)
	var rows []jobRow
	var err error
	if r.dialect == Postgres {
		var args []any
		if args, err = c.postgresArgs(worker, leases); err == nil {
			// On Postgres the read pool is the writer.
			err = r.selectAll(ctx, &rows, claimPostgres, args...)
		}
	} else {
		until, untilArgs := leaseUntil(leases)
		set := `UPDATE jobs SET state = ?, attempt = attempt + 1, attempted_at = ?, lease_owner = ?, lease_expires_at = ` + until
		args := append([]any{jobs.StateRunning, micros(now), worker}, untilArgs...)
		var ids []int64
		if ids, err = c.pick(ctx, r.write); err == nil && len(ids) > 0 {
			err = r.write.NewRaw(set+` WHERE id IN (?) AND state IN (?) RETURNING `+jobColumns,
				append(args, bun.List(ids), bun.List(pending))...).Scan(ctx, &rows)
		}
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	out := make([]jobs.Job, len(rows))
	for i, row := range rows {
		out[i] = row.job()
	}
	// Within an account in due order, as the claim picked them.
	sort.Slice(out, func(i, j int) bool {
		return out[i].RunAt.Before(out[j].RunAt) || out[i].RunAt.Equal(out[j].RunAt) && out[i].ID < out[j].ID
	})
	return out, nil
}

// claim is one claim's bounds, read from its filter.
type claim struct {
	limit, share, ceiling int
	now                   int64
	kinds                 []string
	running, endpointRoom map[string]int
	skipEndpoints         []string
	skipPaceKeys          []string
	skip                  string // SQLite's condition leaving skipped keys out
	skipArgs              []any
}

// roomOf is how many jobs of an endpoint the claim may take; negative
// when unbounded.
func (c claim) roomOf(endpoint string) int {
	if r, ok := c.endpointRoom[endpoint]; ok {
		return r
	}
	return -1
}

func newClaim(leases []jobs.Lease, limit int, now time.Time, f jobs.ClaimFilter) claim {
	c := claim{limit: limit, share: f.AccountShare, ceiling: f.AccountCeiling, now: micros(now),
		kinds: leaseKinds(leases), running: f.AccountsRunning,
		endpointRoom: f.EndpointRoom, skipEndpoints: f.SkipEndpoints, skipPaceKeys: f.SkipPaceKeys}
	// An unbounded ceiling is one no account's room can reach past the
	// claim's limit.
	if unbounded := limit + maxRunning(c.running); c.ceiling <= 0 || c.ceiling > unbounded {
		c.ceiling = unbounded
	}
	if c.share <= 0 || c.share > c.ceiling {
		c.share = c.ceiling
	}
	var b strings.Builder
	for _, k := range []struct {
		column string
		keys   []string
	}{{"endpoint_key", f.SkipEndpoints}, {"pace_key", f.SkipPaceKeys}} {
		if len(k.keys) > 0 {
			b.WriteString(" AND (" + k.column + " IS NULL OR " + k.column + " NOT IN (?))")
			c.skipArgs = append(c.skipArgs, bun.List(k.keys))
		}
	}
	c.skip = b.String()
	return c
}

func maxRunning(running map[string]int) int {
	n := 0
	for _, r := range running {
		n = max(n, r)
	}
	return n
}

// accountsWithPending is the loose index scan that lists, one probe each,
// the accounts with pending jobs (the empty account, of jobs for none,
// first), as a recursive CTE named accounts(a) with a NULL row last.
const accountsWithPending = `accounts(a) AS (
	SELECT MIN(account_id) FROM jobs WHERE state IN (` + pendingSQL + `)
	UNION ALL
	SELECT (SELECT MIN(account_id) FROM jobs WHERE state IN (` + pendingSQL + `) AND account_id > accounts.a)
	FROM accounts WHERE accounts.a IS NOT NULL
)`

// pendingSQL is the pending states as an SQL list, for statements whose
// text is fixed: a partial index on the pending states serves a statement
// only when its text names them.
const pendingSQL = `'` + string(jobs.StateAvailable) + `', '` + string(jobs.StateRetryable) + `'`

// claimScanBeyond is how many of an account's due jobs past its room a
// claim reads to find jobs of keys it does not skip. Deeper, a skipped
// endpoint's backlog would be read past on every claim; the account's
// jobs behind more than this of its own skipped endpoints' jobs wait for
// them (those of other accounts never do: each account is read apart).
const claimScanBeyond = 256

func (c claim) scanBeyond() int {
	if len(c.skipEndpoints)+len(c.skipPaceKeys) == 0 {
		return 0
	}
	return claimScanBeyond
}

// dueOfAccount is the condition on an account's jobs that a claim may take.
const dueOfAccount = `state IN (?) AND run_at <= ? AND kind IN (?)`

// claimPostgres is the claim on Postgres: one statement whose text never
// changes, so that each connection prepares it once and Postgres plans it
// once (a generic plan) instead of on every claim. Each account's oldest
// due jobs are read up to the room under its ceiling (past the skipped
// keys' jobs, up to claimScanBeyond more); rn numbers them within the
// account, so that rn plus what the account runs already says which are
// within its share, and ern within their endpoint, for its room. Only the
// picked jobs are locked, still pending, and those another claimer holds
// are passed over (SKIP LOCKED); the lock reads them by primary key
// whatever the plan. The sets (accounts running, endpoint rooms, kinds,
// skipped keys, lease ends by kind) are JSON parameters; see postgresArgs
// for the order.
const claimPostgres = `WITH RECURSIVE ` + accountsWithPending + `,
	running(a, n) AS (SELECT key, value::int FROM jsonb_each_text($1::jsonb)),
	endpoint_room(k, n) AS (SELECT key, value::int FROM jsonb_each_text($2::jsonb)),
	visited AS (
		SELECT accounts.a, COALESCE(running.n, 0) AS held FROM accounts LEFT JOIN running ON running.a = accounts.a
		WHERE accounts.a IS NOT NULL
	),
	candidates AS (
		SELECT j.id, j.run_at, j.endpoint_key, v.a, v.held,
			row_number() OVER (PARTITION BY v.a ORDER BY j.run_at, j.id) AS rn,
			row_number() OVER (PARTITION BY j.endpoint_key ORDER BY j.run_at, j.id) AS ern
		FROM visited v CROSS JOIN LATERAL (
			SELECT id, run_at, endpoint_key FROM (
				SELECT id, run_at, endpoint_key, pace_key FROM jobs
				WHERE account_id = v.a AND state IN (` + pendingSQL + `) AND run_at <= $3
					AND kind = ANY(ARRAY(SELECT jsonb_array_elements_text($4::jsonb)))
				ORDER BY run_at, id
				LIMIT CASE WHEN v.a = '' THEN $5 ELSE LEAST(GREATEST($6 - v.held, 0), $5) END + $7
			) d
			WHERE (endpoint_key IS NULL OR endpoint_key <> ALL(ARRAY(SELECT jsonb_array_elements_text($8::jsonb))))
				AND (pace_key IS NULL OR pace_key <> ALL(ARRAY(SELECT jsonb_array_elements_text($9::jsonb))))
			ORDER BY run_at, id
			LIMIT CASE WHEN v.a = '' THEN $5 ELSE LEAST(GREATEST($6 - v.held, 0), $5) END
		) j
	),
	picked(id) AS (
		SELECT c.id FROM candidates c
		LEFT JOIN endpoint_room er ON er.k = c.endpoint_key
		WHERE er.n IS NULL OR c.ern <= er.n
		ORDER BY c.a <> '' AND c.held + c.rn > $10, c.rn, c.run_at, c.id LIMIT $5
	),
	locked(id) AS (
		SELECT id FROM jobs WHERE id = ANY(ARRAY(SELECT id FROM picked)) AND state IN (` + pendingSQL + `)
		FOR UPDATE SKIP LOCKED
	)
	UPDATE jobs SET state = '` + string(jobs.StateRunning) + `', attempt = attempt + 1, attempted_at = $3, lease_owner = $11,
		lease_expires_at = ($12::jsonb ->> kind)::bigint
	WHERE id IN (SELECT id FROM locked) RETURNING ` + jobColumns

// postgresArgs are claimPostgres's parameters for worker's claim with
// these leases: $1 the jobs each account runs, $2 each bounded endpoint's
// room, $3 now, $4 the kinds, $5 the limit, $6 the ceiling, $7 how far
// past an account's room to read, $8 and $9 the skipped endpoints and pace
// keys, $10 the share, $11 the worker and $12 each kind's lease end.
func (c claim) postgresArgs(worker string, leases []jobs.Lease) ([]any, error) {
	until := make(map[string]int64, len(leases))
	for _, l := range leases {
		until[l.Kind] = micros(l.Until)
	}
	sets := []any{nonNilMap(c.running), nonNilMap(c.endpointRoom), c.kinds, nonNil(c.skipEndpoints), nonNil(c.skipPaceKeys), until}
	encoded := make([]string, len(sets))
	for i, v := range sets {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("claim parameters: %w", err)
		}
		encoded[i] = string(b)
	}
	return []any{encoded[0], encoded[1], c.now, encoded[2], c.limit, c.ceiling, c.scanBeyond(),
		encoded[3], encoded[4], c.share, worker, encoded[5]}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// pick is the claim's choice made in Go from the same reads, for SQLite:
// the accounts with pending jobs, then each one's oldest due jobs up to
// its ceiling's room (one UNION ALL), the jobs within each account's
// share first.
func (c claim) pick(ctx context.Context, db bun.IDB) ([]int64, error) {
	var accounts []string
	if err := db.NewRaw(`WITH RECURSIVE `+accountsWithPending+` SELECT a FROM accounts WHERE a IS NOT NULL`).
		Scan(ctx, &accounts); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("list accounts with pending jobs: %w", err)
	}
	var q strings.Builder
	var args []any
	for _, a := range accounts {
		room := c.limit
		if a != "" {
			room = min(max(c.ceiling-c.running[a], 0), c.limit)
		}
		if room == 0 {
			continue
		}
		if q.Len() > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(`SELECT * FROM (SELECT id, run_at, account_id, endpoint_key FROM (
			SELECT id, run_at, account_id, endpoint_key, pace_key FROM jobs WHERE account_id = ? AND ` + dueOfAccount + `
			ORDER BY run_at, id LIMIT ?) WHERE true` + c.skip + ` ORDER BY run_at, id LIMIT ?)`)
		args = append(args, a, bun.List(pending), c.now, bun.List(c.kinds), room+c.scanBeyond())
		args = append(args, c.skipArgs...)
		args = append(args, room)
	}
	if q.Len() == 0 {
		return nil, nil
	}
	var due []struct {
		ID          int64          `bun:"id"`
		RunAt       int64          `bun:"run_at"`
		AccountID   string         `bun:"account_id"`
		EndpointKey sql.NullString `bun:"endpoint_key"`
	}
	if err := db.NewRaw(q.String(), args...).Scan(ctx, &due); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read due jobs: %w", err)
	}
	// Each account's jobs arrive in due order: the first share less what
	// it runs are within its share.
	type ranked struct {
		id, runAt int64
		rn        int
		borrowed  bool
	}
	all := make([]ranked, 0, len(due))
	rn, ern := map[string]int{}, map[string]int{}
	for _, j := range due {
		rn[j.AccountID]++
		if e := j.EndpointKey; e.Valid {
			// An account's jobs are in due order, and an endpoint is
			// one account's.
			if ern[e.String]++; c.roomOf(e.String) >= 0 && ern[e.String] > c.roomOf(e.String) {
				continue
			}
		}
		all = append(all, ranked{j.ID, j.RunAt, rn[j.AccountID], j.AccountID != "" && c.running[j.AccountID]+rn[j.AccountID] > c.share})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		switch {
		case a.borrowed != b.borrowed:
			return !a.borrowed
		case a.rn != b.rn:
			return a.rn < b.rn
		}
		return a.runAt < b.runAt || a.runAt == b.runAt && a.id < b.id
	})
	ids := make([]int64, 0, min(len(all), c.limit))
	for _, j := range all[:min(len(all), c.limit)] {
		ids = append(ids, j.id)
	}
	return ids, nil
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
	_, err := r.write.NewRaw(
		`UPDATE jobs SET state = ?, finished_at = ?, lease_owner = NULL, lease_expires_at = NULL, unique_key = NULL, `+outcomeRecorded+`
		WHERE id IN (?) AND lease_owner = ? AND state = ?`,
		jobs.StateCompleted, micros(now), bun.List(ids), worker, jobs.StateRunning,
	).Exec(ctx)
	if err != nil {
		return fmt.Errorf("complete jobs: %w", err)
	}
	return nil
}

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
		`UPDATE jobs SET state = ?, finished_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL, unique_key = NULL, `+outcomeRecorded+`
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
func (r JobQueue) NextJobAt(ctx context.Context, kinds []string) (time.Time, error) {
	var next sql.NullInt64
	err := r.read.NewRaw(`SELECT MIN(run_at) FROM jobs WHERE state IN (?) AND kind IN (?)`,
		bun.List(pending), bun.List(kinds)).Scan(ctx, &next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next job time: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return fromMicros(next.Int64), nil
}

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
