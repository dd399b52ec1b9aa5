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

	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// ClaimJobs leases up to limit due jobs of the leases' kinds to worker,
// each until its kind's lease ends, and returns them with their attempt
// counted. The filter shares the claim across accounts and endpoints (see
// jobs.ClaimFilter), counting the jobs running in the whole queue, whoever
// runs them:
//
//   - Only the claim's kinds with a job due are read (jobs_due_kind):
//     the cron runner's claims read no message deliveries, however many
//     wait, and the other way round.
//   - The accounts with pending jobs are visited one index probe each
//     (jobs_due_account_kind), at most claimVisits(limit) of them, from where
//     the worker's previous claim of the pool stopped (job_runners), so
//     that with more accounts than one claim visits each has its turn.
//     The jobs of no account are read in every claim.
//   - The running jobs of each account of the claim's kinds are counted in
//     the queue (jobs_leased, which holds only them) when other runners of the pool
//     claim too (filter.Shared); else the claimer's own are all there are
//     (filter.AccountsRunning). Each visited account gives its oldest due
//     jobs up to its room under the ceiling and at most its part of the
//     claim (claimPart).
//   - The claim takes those within each account's share first, in turns
//     (each account's oldest, then each one's second, ...), then the
//     borrowed rest the same way; no job of an endpoint whose breaker is
//     open (job_breakers) but the worker's probes, and no more of a
//     stalled endpoint's jobs than its limit less its running ones
//     (jobs_leased).
//
// With filter.Shared, the claims of the pool take turns (a transaction's
// advisory lock on Postgres), so that two replicas do not both fill the
// same room. On Postgres the claim is one statement, and concurrent
// claimers skip each other's rows (SKIP LOCKED); on SQLite, under its
// single writer, the jobs are picked from the same reads in Go and then
// taken if still pending.
func (r JobQueue) ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, f jobs.ClaimFilter) ([]jobs.Job, error) {
	if len(leases) == 0 || limit <= 0 {
		return nil, nil
	}
	c := newClaim(leases, limit, now, f)
	var rows []jobRow
	var err error
	if r.dialect == Postgres {
		rows, err = r.claimPostgres(ctx, c, worker, leases)
	} else if c.shared {
		// Under the single writer's lock from the reads to the update.
		err = r.db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			rows, err = c.claimSQLite(ctx, tx, worker, leases)
			return err
		})
	} else {
		rows, err = c.claimSQLite(ctx, r.write, worker, leases)
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

// claimSQLite picks the jobs in Go and takes those still pending.
func (c claim) claimSQLite(ctx context.Context, db bun.IDB, worker string, leases []jobs.Lease) ([]jobRow, error) {
	ids, err := c.pick(ctx, db, worker)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	until, untilArgs := leaseUntil(leases)
	args := append([]any{jobs.StateRunning, c.now, worker}, untilArgs...)
	var rows []jobRow
	err = db.NewRaw(`UPDATE jobs SET state = ?, attempt = attempt + 1, attempted_at = ?, lease_owner = ?, lease_expires_at = `+until+`
		WHERE id IN (?) AND state IN (?) RETURNING `+jobColumns,
		append(args, bun.List(ids), bun.List(pending))...).Scan(ctx, &rows)
	return rows, err
}

// claimPostgres runs the claim statement, in a transaction holding the
// pool's advisory lock when other runners of the pool claim too.
func (r JobQueue) claimPostgres(ctx context.Context, c claim, worker string, leases []jobs.Lease) ([]jobRow, error) {
	args, err := c.postgresArgs(worker, leases)
	if err != nil {
		return nil, err
	}
	var rows []jobRow
	if !c.shared {
		// On Postgres the read pool is the writer.
		err = r.selectAll(ctx, &rows, claimPostgres, args...)
		return rows, err
	}
	stmt, err := r.stmts.get(ctx, claimPostgres)
	if err != nil {
		return nil, err
	}
	err = r.db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(?))`, claimLockClass, c.pool); err != nil {
			return fmt.Errorf("take the claim lock: %w", err)
		}
		// The statement prepared on this connection, if it has been.
		done := r.observePrepared(ctx, claimPostgres, args)
		res, err := tx.Tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
		done(err)
		if err != nil {
			return err
		}
		return r.scanner.ScanRows(ctx, res, &rows)
	})
	return rows, err
}

// claimLockClass is the first key of the claims' advisory locks ("SWBC"),
// apart from the processes' (processClass); the second is the pool's hash.
const claimLockClass = 0x53574243

// claim is one claim's bounds, read from its filter.
type claim struct {
	pool                  string
	limit, share, ceiling int
	visits                int
	now                   int64
	kinds                 []string
	endpointLimit         int
	stalled, probes       []string
	running               map[string]int
	skipEndpoints         []string
	skipPaceKeys          []string
	shared                bool
}

// claimVisits is how many accounts with pending jobs a claim of limit
// visits at most: enough for every job of the claim to be another
// account's, so that one claim can give each of that many accounts a
// job. Past it the claims go round (job_runners.account_after): with
// more accounts, a claim costs what one of limit accounts costs.
func claimVisits(limit int) int { return max(limit, 16) }

// claimPart bounds how many due jobs of one account a claim visiting n
// accounts reads: twice its part of the limit (at least 4), so that the
// rows read stay within a few times the limit however many accounts
// there are. An account with more due jobs than its part, while the
// others have fewer, borrows the rest in the next claim.
func claimPart(limit, n int) int { return max((2*limit+n-1)/max(n, 1), 4) }

func newClaim(leases []jobs.Lease, limit int, now time.Time, f jobs.ClaimFilter) claim {
	c := claim{pool: f.Pool, limit: limit, share: f.AccountShare, ceiling: f.AccountCeiling, visits: claimVisits(limit),
		now: micros(now), kinds: leaseKinds(leases), endpointLimit: f.EndpointLimit,
		stalled: f.StalledEndpoints, probes: f.Probes, running: f.AccountsRunning,
		skipEndpoints: f.SkipEndpoints, skipPaceKeys: f.SkipPaceKeys, shared: f.Shared}
	// An unbounded ceiling is one no account's room reaches.
	if c.ceiling <= 0 {
		c.ceiling = unboundedRoom
	}
	if c.share <= 0 || c.share > c.ceiling {
		c.share = c.ceiling
	}
	return c
}

// unboundedRoom stands for no bound in the claim's arithmetic.
const unboundedRoom = 1 << 30

// pendingSQL is the pending states as an SQL list, for statements whose
// text is fixed: a partial index on the pending states serves a statement
// only when its text names them.
const pendingSQL = `'` + string(jobs.StateAvailable) + `', '` + string(jobs.StateRetryable) + `'`

// runningSQL is the running state, for the partial indexes on it.
const runningSQL = `'` + string(jobs.StateRunning) + `'`

// claimScanBeyond is how many of an account's due jobs past its room a
// claim reads to find jobs of keys it does not skip. Deeper, a skipped
// endpoint's backlog would be read past on every claim; the account's
// jobs behind more than this of its own skipped endpoints' jobs wait for
// them (those of other accounts never do: each account is read apart).
const claimScanBeyond = 256

// claimPostgres is the claim on Postgres: one statement whose text never
// changes, so that each connection prepares it once and Postgres plans it
// once (a generic plan) instead of on every claim. due_kinds are the
// claim's kinds with a job due (one probe of jobs_due_kind each); without
// one, nothing more is read. visit lists the
// accounts with pending jobs from the cursor on, wrapping round (from the
// first account again, unless the cursor is there already), at most
// $15, each account one probe (OFFSET 0 keeps Postgres from copying a
// probe into each place its result is used; a probe from the first
// account walks past the entries of the jobs claimed since the last
// vacuum); running counts the running jobs of each account (of the claim's
// kinds) in the queue, or reads the claimer's count ($17) when it is the
// pool's only runner (the scan is then skipped whole), bounded the room of each bounded endpoint (its limit less its
// running jobs), blocked the endpoints left out (skipped, or a breaker
// open and no probe of this claimer's). Each visited account's oldest due
// jobs are read up to its room (past the blocked keys' jobs, up to
// claimScanBeyond more), a due kind at a time (jobs_due_account_kind), so
// that another runner's backlog is never read past; rn numbers them within the account, so that rn
// plus what the account runs says which are within its share, and ern
// within their endpoint, for its room. Only the picked jobs are locked,
// still pending, and those another claimer holds are passed over (SKIP
// LOCKED); the lock reads them by primary key whatever the plan. A visit
// cut short by its bound moves the cursor to its last account. The sets
// (kinds, keys, lease ends by kind) are JSON parameters; see postgresArgs
// for the order.
const claimPostgres = `WITH RECURSIVE
	cursor(after) AS MATERIALIZED (
		SELECT COALESCE((SELECT account_after FROM job_runners WHERE worker = $11 AND pool = $1), '')
	),
	visit(a, n, wrapped) AS (
		SELECT s.a, 1, s.wrapped FROM (
			SELECT COALESCE(x.a, CASE WHEN (SELECT after FROM cursor) = '' THEN NULL
					ELSE (SELECT MIN(account_id) FROM jobs WHERE state IN (` + pendingSQL + `) AND account_id > '') END) AS a,
				x.a IS NULL AS wrapped
			FROM (SELECT MIN(account_id) AS a FROM jobs WHERE state IN (` + pendingSQL + `) AND account_id > (SELECT after FROM cursor)) x
			OFFSET 0
		) s WHERE s.a IS NOT NULL AND EXISTS (SELECT FROM due_kinds)
		UNION ALL
		SELECT s.a, v.n + 1, s.wrapped FROM visit v CROSS JOIN LATERAL (
			SELECT COALESCE(x.a, CASE WHEN v.wrapped OR (SELECT after FROM cursor) = '' THEN NULL
					ELSE (SELECT MIN(account_id) FROM jobs WHERE state IN (` + pendingSQL + `) AND account_id > '') END) AS a,
				v.wrapped OR x.a IS NULL AS wrapped
			FROM (SELECT MIN(account_id) AS a FROM jobs WHERE state IN (` + pendingSQL + `) AND account_id > v.a) x
			OFFSET 0
		) s
		WHERE v.n < $15::int AND s.a IS NOT NULL AND NOT (s.wrapped AND s.a > (SELECT after FROM cursor))
	),
	kinds(k) AS MATERIALIZED (SELECT jsonb_array_elements_text($4::jsonb)),
	due_kinds(k) AS MATERIALIZED (
		SELECT k FROM kinds WHERE EXISTS (
			SELECT FROM jobs WHERE kind = kinds.k AND state IN (` + pendingSQL + `) AND run_at <= $3)
	),
	running(a, n) AS MATERIALIZED (
		SELECT account_id, count(*) FROM jobs
		WHERE $16::bool AND state = ` + runningSQL + ` AND account_id <> '' AND kind = ANY(ARRAY(SELECT k FROM kinds))
		GROUP BY account_id
		UNION ALL
		SELECT key, value::bigint FROM jsonb_each_text($17::jsonb) WHERE NOT $16::bool
	),
	visits(n) AS MATERIALIZED (SELECT GREATEST(count(*), 1) FROM visit),
	visited AS (
		SELECT v.a, COALESCE(r.n, 0) AS held,
			CASE WHEN v.a = '' THEN $5::int
			ELSE LEAST(GREATEST($6::int - COALESCE(r.n, 0), 0), $5::int, GREATEST((2 * $5::int + vs.n - 1) / vs.n, 4)) END AS room
		FROM (SELECT a FROM visit UNION ALL SELECT '') v CROSS JOIN visits vs LEFT JOIN running r ON r.a = v.a
	),
	bounded(k, room) AS MATERIALIZED (
		SELECT b.k, GREATEST(MIN(b.lim) - (SELECT count(*) FROM jobs WHERE state = ` + runningSQL + ` AND endpoint_key = b.k), 0)
		FROM (
			SELECT jsonb_array_elements_text($13::jsonb) AS k, $2::int AS lim WHERE $2::int > 0
			UNION ALL SELECT endpoint_key, $2::int FROM job_breakers WHERE stalled_at IS NOT NULL AND $2::int > 0
			UNION ALL SELECT jsonb_array_elements_text($14::jsonb), 1
		) b GROUP BY b.k
	),
	blocked(k) AS MATERIALIZED (
		SELECT jsonb_array_elements_text($8::jsonb)
		UNION ALL
		SELECT endpoint_key FROM job_breakers WHERE opened_until IS NOT NULL
			AND endpoint_key <> ALL(ARRAY(SELECT jsonb_array_elements_text($14::jsonb)))
		UNION ALL
		SELECT k FROM bounded WHERE room = 0
	),
	beyond(n) AS MATERIALIZED (
		SELECT CASE WHEN EXISTS (SELECT FROM blocked) OR EXISTS (SELECT FROM bounded) OR jsonb_array_length($9::jsonb) > 0 THEN $7::int ELSE 0 END
	),
	candidates AS (
		SELECT j.id, j.run_at, j.endpoint_key, v.a, v.held,
			row_number() OVER (PARTITION BY v.a ORDER BY j.run_at, j.id) AS rn,
			row_number() OVER (PARTITION BY j.endpoint_key ORDER BY j.run_at, j.id) AS ern
		FROM visited v CROSS JOIN LATERAL (
			SELECT id, run_at, endpoint_key FROM (
				SELECT e.id, e.run_at, e.endpoint_key, e.pace_key FROM due_kinds dk CROSS JOIN LATERAL (
					SELECT id, run_at, endpoint_key, pace_key FROM jobs
					WHERE account_id = v.a AND kind = dk.k AND state IN (` + pendingSQL + `) AND run_at <= $3
					ORDER BY run_at, id
					LIMIT v.room + (SELECT n FROM beyond)
				) e
				ORDER BY run_at, id
				LIMIT v.room + (SELECT n FROM beyond)
			) d
			WHERE (endpoint_key IS NULL OR endpoint_key <> ALL(ARRAY(SELECT k FROM blocked)))
				AND (pace_key IS NULL OR pace_key <> ALL(ARRAY(SELECT jsonb_array_elements_text($9::jsonb))))
			ORDER BY run_at, id
			LIMIT v.room
		) j
		WHERE v.room > 0
	),
	picked(id) AS (
		SELECT c.id FROM candidates c
		LEFT JOIN bounded er ON er.k = c.endpoint_key
		WHERE er.room IS NULL OR c.ern <= er.room
		ORDER BY c.a <> '' AND c.held + c.rn > $10::int, c.rn, c.run_at, c.id LIMIT $5::int
	),
	locked(id) AS (
		SELECT id FROM jobs WHERE id = ANY(ARRAY(SELECT id FROM picked)) AND state IN (` + pendingSQL + `)
		FOR UPDATE SKIP LOCKED
	),
	moved AS (
		UPDATE job_runners SET account_after = (SELECT a FROM visit ORDER BY n DESC LIMIT 1)
		WHERE worker = $11 AND pool = $1 AND (SELECT count(*) FROM visit) >= $15::int
	)
	UPDATE jobs SET state = ` + runningSQL + `, attempt = attempt + 1, attempted_at = $3, lease_owner = $11,
		lease_expires_at = ($12::jsonb ->> kind)::bigint
	WHERE id IN (SELECT id FROM locked) RETURNING ` + jobColumns

// postgresArgs are claimPostgres's parameters for worker's claim with
// these leases: $1 the pool, $2 the stalled endpoints' limit, $3 now, $4
// the kinds, $5 the limit, $6 the ceiling, $7 how far past an account's
// room to read, $8 and $9 the skipped endpoints and pace keys, $10 the
// share, $11 the worker, $12 each kind's lease end, $13 the endpoints the
// worker found stalled, $14 its probes, $15 the accounts to visit, $16
// whether to count the running jobs in the queue and $17 the claimer's.
func (c claim) postgresArgs(worker string, leases []jobs.Lease) ([]any, error) {
	until := make(map[string]int64, len(leases))
	for _, l := range leases {
		until[l.Kind] = micros(l.Until)
	}
	sets := []any{c.kinds, nonNil(c.skipEndpoints), nonNil(c.skipPaceKeys), until, nonNil(c.stalled), nonNil(c.probes), nonNilMap(c.running)}
	encoded := make([]string, len(sets))
	for i, v := range sets {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("claim parameters: %w", err)
		}
		encoded[i] = string(b)
	}
	return []any{c.pool, c.endpointLimit, c.now, encoded[0], c.limit, c.ceiling, claimScanBeyond,
		encoded[1], encoded[2], c.share, worker, encoded[3], encoded[4], encoded[5], c.visits, c.shared, encoded[6]}, nil
}

func nonNilMap(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// dueKinds are those of kinds with a job due at now, one probe of
// jobs_due_kind each (SQLite; the Postgres claim reads them itself).
func dueKinds(ctx context.Context, db bun.IDB, kinds []string, now int64) ([]string, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	var q strings.Builder
	args := make([]any, 0, 2*len(kinds))
	for i, k := range kinds {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		q.WriteString(`SELECT ? AS k WHERE EXISTS (SELECT 1 FROM jobs WHERE kind = ? AND state IN (` + pendingSQL + `) AND run_at <= ?)`)
		args = append(args, k, k, now)
	}
	var due []string
	if err := db.NewRaw(q.String(), args...).Scan(ctx, &due); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the kinds with due jobs: %w", err)
	}
	return due, nil
}

// pick is the claim's choice made in Go from the same reads, for SQLite:
// the accounts to visit, the running jobs of each (counted when shared),
// the blocked and bounded
// endpoints, then each visited account's oldest due jobs up to its room
// (one UNION ALL), the jobs within each account's share first.
func (c claim) pick(ctx context.Context, db bun.IDB, worker string) ([]int64, error) {
	kinds, err := dueKinds(ctx, db, c.kinds, c.now)
	if err != nil || len(kinds) == 0 {
		return nil, err
	}
	accounts, err := c.visit(ctx, db, worker)
	if err != nil {
		return nil, err
	}
	running := c.running
	if c.shared {
		running = map[string]int{}
		var counts []struct {
			Key string `bun:"k"`
			N   int    `bun:"n"`
		}
		if err := db.NewRaw(`SELECT account_id AS k, count(*) AS n FROM jobs WHERE state = ? AND account_id <> '' AND kind IN (?) GROUP BY account_id`,
			jobs.StateRunning, bun.List(c.kinds)).Scan(ctx, &counts); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("count running jobs: %w", err)
		}
		for _, n := range counts {
			running[n.Key] = n.N
		}
	}
	blocked, room, err := c.endpoints(ctx, db)
	if err != nil {
		return nil, err
	}
	skip, skipArgs := "", []any{}
	for _, k := range []struct {
		column string
		keys   []string
	}{{"endpoint_key", blocked}, {"pace_key", c.skipPaceKeys}} {
		if len(k.keys) > 0 {
			skip += " AND (" + k.column + " IS NULL OR " + k.column + " NOT IN (?))"
			skipArgs = append(skipArgs, bun.List(k.keys))
		}
	}
	beyond := 0
	if skip != "" || len(room) > 0 {
		beyond = claimScanBeyond
	}
	part := claimPart(c.limit, len(accounts))
	var q strings.Builder
	var args []any
	for _, a := range append([]string{""}, accounts...) {
		take := c.limit
		if a != "" {
			take = min(max(c.ceiling-running[a], 0), c.limit, part)
		}
		if take == 0 {
			continue
		}
		if q.Len() > 0 {
			q.WriteString(" UNION ALL ")
		}
		// The account's oldest due jobs of each due kind, merged.
		q.WriteString(`SELECT * FROM (SELECT id, run_at, account_id, endpoint_key FROM (`)
		for i, k := range kinds {
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			q.WriteString(`SELECT * FROM (SELECT id, run_at, account_id, endpoint_key, pace_key FROM jobs
				WHERE account_id = ? AND kind = ? AND state IN (` + pendingSQL + `) AND run_at <= ?
				ORDER BY run_at, id LIMIT ?)`)
			args = append(args, a, k, c.now, take+beyond)
		}
		q.WriteString(` ORDER BY run_at, id LIMIT ?) WHERE true` + skip + ` ORDER BY run_at, id LIMIT ?)`)
		args = append(args, take+beyond)
		args = append(args, skipArgs...)
		args = append(args, take)
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
			if r, bounded := room[e.String]; bounded && ern[e.String] >= r {
				continue
			}
			ern[e.String]++
		}
		all = append(all, ranked{j.ID, j.RunAt, rn[j.AccountID], j.AccountID != "" && running[j.AccountID]+rn[j.AccountID] > c.share})
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

// visit lists the accounts with pending jobs that the claim visits, from
// worker's cursor on and round, at most c.visits of them, and moves the
// cursor to the last one when there were more (SQLite).
func (c claim) visit(ctx context.Context, db bun.IDB, worker string) ([]string, error) {
	var after []string
	if err := db.NewRaw(`SELECT account_after FROM job_runners WHERE worker = ? AND pool = ?`, worker, c.pool).
		Scan(ctx, &after); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the claim cursor: %w", err)
	}
	cursor := ""
	if len(after) == 1 {
		cursor = after[0]
	}
	// from lists up to n accounts with pending jobs after a, in order.
	from := func(a string, n int) ([]string, error) {
		var out []string
		err := db.NewRaw(`WITH RECURSIVE accounts(a) AS (
				SELECT MIN(account_id) FROM jobs WHERE state IN (`+pendingSQL+`) AND account_id > ?
				UNION ALL
				SELECT (SELECT MIN(account_id) FROM jobs WHERE state IN (`+pendingSQL+`) AND account_id > accounts.a)
				FROM accounts WHERE accounts.a IS NOT NULL
			) SELECT a FROM accounts WHERE a IS NOT NULL LIMIT ?`, a, n).Scan(ctx, &out)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("list accounts with pending jobs: %w", err)
		}
		return out, nil
	}
	accounts, err := from(cursor, c.visits)
	if err != nil {
		return nil, err
	}
	if len(accounts) < c.visits && cursor != "" {
		// Round to the accounts up to the cursor.
		more, err := from("", c.visits-len(accounts))
		if err != nil {
			return nil, err
		}
		for _, a := range more {
			if a > cursor {
				break
			}
			accounts = append(accounts, a)
		}
	}
	if len(accounts) == c.visits {
		if _, err := db.NewRaw(`UPDATE job_runners SET account_after = ? WHERE worker = ? AND pool = ?`,
			accounts[len(accounts)-1], worker, c.pool).Exec(ctx); err != nil {
			return nil, fmt.Errorf("move the claim cursor: %w", err)
		}
	}
	return accounts, nil
}

// endpoints reads the claim's endpoint bounds (SQLite): the endpoints it
// leaves out (skipped, with an open breaker that is not the claimer's
// probe, or without room), and the room of each bounded one (a stalled endpoint's limit,
// a probe's one, less its running jobs).
func (c claim) endpoints(ctx context.Context, db bun.IDB) (blocked []string, room map[string]int, err error) {
	var rows []struct {
		Key     string `bun:"endpoint_key"`
		Open    bool   `bun:"open"`
		Stalled bool   `bun:"stalled"`
	}
	if err := db.NewRaw(`SELECT endpoint_key, opened_until IS NOT NULL AS open, stalled_at IS NOT NULL AS stalled
		FROM job_breakers WHERE opened_until IS NOT NULL OR stalled_at IS NOT NULL`).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("read the endpoint breakers: %w", err)
	}
	blocked = append(blocked, c.skipEndpoints...)
	limits := map[string]int{}
	bound := func(k string, n int) {
		if l, ok := limits[k]; !ok || n < l {
			limits[k] = n
		}
	}
	for _, p := range c.probes {
		bound(p, 1)
	}
	for _, row := range rows {
		switch {
		case row.Open && !slices.Contains(c.probes, row.Key):
			blocked = append(blocked, row.Key)
		case row.Stalled && c.endpointLimit > 0:
			bound(row.Key, c.endpointLimit)
		}
	}
	if c.endpointLimit > 0 {
		for _, s := range c.stalled {
			bound(s, c.endpointLimit)
		}
	}
	if len(limits) == 0 {
		return blocked, nil, nil
	}
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	var counts []struct {
		Key string `bun:"k"`
		N   int    `bun:"n"`
	}
	if err := db.NewRaw(`SELECT endpoint_key AS k, count(*) AS n FROM jobs WHERE state = ? AND endpoint_key IN (?) GROUP BY endpoint_key`,
		jobs.StateRunning, bun.List(keys)).Scan(ctx, &counts); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("count running jobs of endpoints: %w", err)
	}
	running := map[string]int{}
	for _, n := range counts {
		running[n.Key] = n.N
	}
	room = make(map[string]int, len(limits))
	for k, l := range limits {
		if room[k] = max(l-running[k], 0); room[k] == 0 {
			blocked = append(blocked, k)
		}
	}
	return blocked, room, nil
}
