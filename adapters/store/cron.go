package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// CronStore is the storage of cron jobs and their executions (cron.Store).
type CronStore struct{ *Conn }

var _ appcron.Store = CronStore{}

// CronStore is db's CronStore, outside any transaction.
func (db *DB) CronStore() CronStore { return CronStore{db.base} }

// Repos is s itself: its methods run each as its own statement outside a
// transaction, and inside the one Transact runs.
func (s CronStore) Repos() appcron.Repos { return s }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there (appcron.Store).
func (s CronStore) Decide(ctx context.Context, decide func(ctx context.Context, tx appcron.TxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) { return decide(ctx, CronStore{c}) })
}

// Claim runs claim in a transaction, taking rows through s on it, and
// writes the Runs it returns there (appcron.Store): the executions, the
// queue jobs of those stored, and the jobs' next runs.
func (s CronStore) Claim(ctx context.Context, claim func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error)) ([]string, error) {
	var stored []string
	err := s.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		tx := CronStore{c}
		runs, err := claim(ctx, tx)
		if err != nil {
			return err
		}
		execs := make([]cron.Execution, len(runs.Runs))
		for i, r := range runs.Runs {
			execs[i] = r.Execution
		}
		if stored, err = tx.insertExecutions(ctx, execs); err != nil {
			return err
		}
		if err := tx.setNextRuns(ctx, runs.NextRuns); err != nil {
			return err
		}
		var enqueue []jobs.EnqueueParams
		for _, r := range runs.Runs {
			if r.Job.Kind != "" && slices.Contains(stored, r.Execution.ID) {
				enqueue = append(enqueue, r.Job)
			}
		}
		if len(enqueue) > 0 {
			return c.writeInTx(ctx, writes.Batch{Jobs: enqueue})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// Record writes call outcomes, and the callbacks of those recorded, in
// one transaction (appcron.Store).
func (s CronStore) Record(ctx context.Context, owner string, outcomes []appcron.Outcome) ([]string, error) {
	var recorded []string
	err := s.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		var err error
		if recorded, err = (CronStore{c}).finishExecutions(ctx, owner, outcomes); err != nil {
			return err
		}
		if callbacks := callbacksOf(outcomes, recorded); len(callbacks) > 0 {
			return c.writeInTx(ctx, writes.Batch{Jobs: callbacks})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recorded, nil
}

const cronJobColumns = "id, account_id, endpoint_url, method, headers, body, frequency, time_of_day, timezone, day_of_week, day_of_month, custom_schedule, timeout_ms, retries, status, next_run_at, version, created_at, updated_at, " +
	"origin, name, description, tags, text_body, retry_delay_ms, success_url, failure_url, repeat_every, days_of_week, start_date, end_at, max_runs, runs"

type cronJobRow struct {
	bun.BaseModel  `bun:"table:cron_jobs"`
	ID             string         `bun:"id,pk"`
	AccountID      string         `bun:"account_id"`
	EndpointURL    string         `bun:"endpoint_url"`
	Method         string         `bun:"method"`
	Headers        string         `bun:"headers"`
	Body           sql.NullString `bun:"body"`
	Frequency      string         `bun:"frequency"`
	TimeOfDay      string         `bun:"time_of_day"`
	Timezone       string         `bun:"timezone"`
	DayOfWeek      sql.NullInt64  `bun:"day_of_week"`
	DayOfMonth     sql.NullInt64  `bun:"day_of_month"`
	CustomSchedule string         `bun:"custom_schedule"`
	TimeoutMs      int64          `bun:"timeout_ms"`
	Retries        int            `bun:"retries"`
	Status         string         `bun:"status"`
	NextRunAt      sql.NullInt64  `bun:"next_run_at"`
	Version        int64          `bun:"version"`
	CreatedAt      int64          `bun:"created_at"`
	UpdatedAt      sql.NullInt64  `bun:"updated_at"`
	Origin         string         `bun:"origin"`
	Name           string         `bun:"name"`
	Description    string         `bun:"description"`
	// Tags are ",a,b," (empty without tags): a tag filter is a LIKE.
	Tags         string         `bun:"tags"`
	TextBody     sql.NullString `bun:"text_body"`
	RetryDelayMs int64          `bun:"retry_delay_ms"`
	SuccessURL   string         `bun:"success_url"`
	FailureURL   string         `bun:"failure_url"`
	RepeatEvery  int            `bun:"repeat_every"`
	// DaysOfWeek are comma-separated.
	DaysOfWeek string        `bun:"days_of_week"`
	StartDate  string        `bun:"start_date"`
	EndAt      sql.NullInt64 `bun:"end_at"`
	MaxRuns    int           `bun:"max_runs"`
	Runs       int           `bun:"runs"`
}

// tagsColumn is the tags column of a job's tags.
func tagsColumn(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return "," + strings.Join(tags, ",") + ","
}

func tagsOf(column string) []string {
	column = strings.Trim(column, ",")
	if column == "" {
		return nil
	}
	return strings.Split(column, ",")
}

func daysColumn(days []int) string {
	parts := make([]string, len(days))
	for i, d := range days {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, ",")
}

func daysOf(column string) []int {
	if column == "" {
		return nil
	}
	parts := strings.Split(column, ",")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		if d, err := strconv.Atoi(p); err == nil {
			out = append(out, d)
		}
	}
	return out
}

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

func nullTime(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*t), Valid: true}
}

func intOf(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}

func timeOf(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

func cronJobToRow(j cron.Job) cronJobRow {
	headers := j.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	// A map of strings always encodes.
	h, _ := json.Marshal(headers)
	row := cronJobRow{
		ID: j.ID, AccountID: j.AccountID, EndpointURL: j.EndpointURL, Method: j.Method, Headers: string(h),
		Frequency: string(j.Frequency), TimeOfDay: j.Time, Timezone: j.Timezone,
		DayOfWeek: nullInt(j.DayOfWeek), DayOfMonth: nullInt(j.DayOfMonth), CustomSchedule: j.CustomSchedule,
		TimeoutMs: j.Timeout.Milliseconds(), Retries: j.Retries, Status: string(j.Status),
		NextRunAt: nullTime(j.NextRunAt), Version: j.Version, CreatedAt: micros(j.CreatedAt), UpdatedAt: nullTime(j.UpdatedAt),
		Origin: j.Origin, Name: j.Name, Description: j.Description, Tags: tagsColumn(j.Tags), RetryDelayMs: j.RetryDelay.Milliseconds(),
		SuccessURL: j.SuccessURL, FailureURL: j.FailureURL, RepeatEvery: j.Every, DaysOfWeek: daysColumn(j.DaysOfWeek),
		StartDate: j.Start, EndAt: nullTime(j.EndAt), MaxRuns: j.MaxRuns, Runs: j.Runs,
	}
	if j.Body != nil {
		row.Body = sql.NullString{String: string(j.Body), Valid: true}
	}
	if j.TextBody != nil {
		row.TextBody = sql.NullString{String: *j.TextBody, Valid: true}
	}
	return row
}

func (r cronJobRow) domain() cron.Job {
	j := cron.Job{
		ID: r.ID, AccountID: r.AccountID, EndpointURL: r.EndpointURL, Method: r.Method,
		Spec: cron.Spec{
			Frequency: cron.Frequency(r.Frequency), Time: r.TimeOfDay, Timezone: r.Timezone,
			DayOfWeek: intOf(r.DayOfWeek), DayOfMonth: intOf(r.DayOfMonth), CustomSchedule: r.CustomSchedule,
			Every: r.RepeatEvery, DaysOfWeek: daysOf(r.DaysOfWeek), Start: r.StartDate, EndAt: timeOf(r.EndAt), MaxRuns: r.MaxRuns,
		},
		Timeout: time.Duration(r.TimeoutMs) * time.Millisecond, Retries: r.Retries, Status: cron.Status(r.Status),
		NextRunAt: timeOf(r.NextRunAt), Version: r.Version, CreatedAt: fromMicros(r.CreatedAt), UpdatedAt: timeOf(r.UpdatedAt),
		Origin: r.Origin, Name: r.Name, Description: r.Description, Tags: tagsOf(r.Tags), RetryDelay: time.Duration(r.RetryDelayMs) * time.Millisecond,
		SuccessURL: r.SuccessURL, FailureURL: r.FailureURL, Runs: r.Runs,
	}
	if r.TextBody.Valid {
		text := r.TextBody.String
		j.TextBody = &text
	}
	_ = json.Unmarshal([]byte(r.Headers), &j.Headers)
	if len(j.Headers) == 0 {
		j.Headers = nil
	}
	if r.Body.Valid {
		j.Body = json.RawMessage(r.Body.String)
	}
	return j
}

// LockAccountJobs takes a transaction-scoped advisory lock per account on
// Postgres; SQLite transactions already hold the one write lock.
func (r CronStore) LockAccountJobs(ctx context.Context, accountID string) error {
	if r.dialect != Postgres {
		return nil
	}
	_, err := r.write.NewRaw("SELECT pg_advisory_xact_lock(hashtext(?))", "cron_jobs:"+accountID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("lock account jobs: %w", err)
	}
	return nil
}

// CountJobs counts an account's jobs.
func (r CronStore) CountJobs(ctx context.Context, accountID string) (int, error) {
	n, err := r.read.NewSelect().Model((*cronJobRow)(nil)).Where("account_id = ?", accountID).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count cron jobs: %w", err)
	}
	return n, nil
}

// Job reads one job of an account, locking it inside a transaction on
// Postgres.
func (r CronStore) Job(ctx context.Context, accountID, id string) (cron.Job, error) {
	var row cronJobRow
	q := "SELECT " + cronJobColumns + " FROM cron_jobs WHERE id = ? AND account_id = ?"
	if r.tx != nil && r.dialect == Postgres {
		q += " FOR UPDATE"
	}
	// Inside a transaction read is the transaction; outside, the read pool.
	if err := r.read.NewRaw(q, id, accountID).Scan(ctx, &row); err != nil {
		return cron.Job{}, translate(err, "cron job")
	}
	return row.domain(), nil
}

// Jobs lists an account's jobs, oldest first.
func (r CronStore) Jobs(ctx context.Context, q appcron.JobQuery) ([]cron.Job, int, error) {
	base := r.read.NewSelect().Model((*cronJobRow)(nil)).Where("account_id = ?", q.AccountID)
	if q.Status != "" {
		base = base.Where("status = ?", string(q.Status))
	}
	for _, tag := range q.Tags {
		base = base.Where("tags LIKE ? ESCAPE '\\'", "%,"+likeEscape(tag)+",%")
	}
	if q.Search != "" {
		pattern := "%" + likeEscape(strings.ToLower(q.Search)) + "%"
		base = base.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("LOWER(name) LIKE ? ESCAPE '\\'", pattern).
				WhereOr("LOWER(description) LIKE ? ESCAPE '\\'", pattern).
				WhereOr("LOWER(endpoint_url) LIKE ? ESCAPE '\\'", pattern)
		})
	}
	total, err := base.Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count cron jobs: %w", err)
	}
	var rows []cronJobRow
	if err := base.Order("created_at", "id").Limit(q.Limit).Offset(q.Offset).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("list cron jobs: %w", err)
	}
	out := make([]cron.Job, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, total, nil
}

// updateJob saves every field of a job.
func (r CronStore) updateJob(ctx context.Context, j cron.Job) error {
	row := cronJobToRow(j)
	res, err := r.write.NewUpdate().Model(&row).ExcludeColumn("id", "account_id", "created_at").WherePK().Where("account_id = ?", j.AccountID).Exec(ctx)
	if err != nil {
		return translate(err, "cron job")
	}
	return requireOneRow(res, "cron job")
}

// ChangeJob reads a job locked and saves what change makes of it, in one
// transaction.
func (r CronStore) ChangeJob(ctx context.Context, accountID, id string, change func(cron.Job) (cron.Job, error)) (cron.Job, error) {
	var out cron.Job
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		tx := CronStore{c}
		j, err := tx.Job(ctx, accountID, id)
		if err != nil {
			return err
		}
		changed, err := change(j)
		if err != nil {
			return err
		}
		out = changed
		if changed.Version == j.Version {
			out = j
			return nil
		}
		return tx.updateJob(ctx, changed)
	})
	if err != nil {
		return cron.Job{}, err
	}
	return out, nil
}

// DeleteJob removes a job and, by cascade, its executions: the queue
// jobs of its pending runs and retries find them gone and end.
func (r CronStore) DeleteJob(ctx context.Context, accountID, id string) error {
	res, err := r.write.NewDelete().Model((*cronJobRow)(nil)).Where("id = ? AND account_id = ?", id, accountID).Exec(ctx)
	if err != nil {
		return translate(err, "cron job")
	}
	return requireOneRow(res, "cron job")
}

const cronExecColumns = "id, job_id, account_id, slot, started_at, status, attempt, interrupted_attempts, response_code, response_time_ms, response_body, error, retry_at, finished_at, lease_owner, lease_until, call_started_at, timed_out"

// likeEscape escapes the LIKE wildcards of s (with backslash, the ESCAPE
// character of every LIKE here).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

type cronExecRow struct {
	bun.BaseModel       `bun:"table:cron_executions"`
	ID                  string         `bun:"id,pk"`
	JobID               string         `bun:"job_id"`
	AccountID           string         `bun:"account_id"`
	Slot                int64          `bun:"slot"`
	StartedAt           int64          `bun:"started_at"`
	Status              string         `bun:"status"`
	Attempt             int            `bun:"attempt"`
	InterruptedAttempts int            `bun:"interrupted_attempts"`
	ResponseCode        int            `bun:"response_code"`
	ResponseTimeMs      int64          `bun:"response_time_ms"`
	ResponseBody        sql.NullString `bun:"response_body"`
	Error               string         `bun:"error"`
	RetryAt             sql.NullInt64  `bun:"retry_at"`
	FinishedAt          sql.NullInt64  `bun:"finished_at"`
	LeaseOwner          sql.NullString `bun:"lease_owner"`
	LeaseUntil          sql.NullInt64  `bun:"lease_until"`
	CallStartedAt       sql.NullInt64  `bun:"call_started_at"`
	TimedOut            bool           `bun:"timed_out"`
}

func (r cronExecRow) domain() cron.Execution {
	e := cron.Execution{
		ID: r.ID, JobID: r.JobID, AccountID: r.AccountID, Slot: fromMicros(r.Slot), StartedAt: fromMicros(r.StartedAt),
		Status: cron.ExecutionStatus(r.Status), Attempt: r.Attempt, InterruptedAttempts: r.InterruptedAttempts,
		ResponseCode: r.ResponseCode, ResponseTimeMs: r.ResponseTimeMs, Error: r.Error, RetryAt: timeOf(r.RetryAt),
		LeaseOwner: r.LeaseOwner.String, CallStartedAt: timeOf(r.CallStartedAt), TimedOut: r.TimedOut,
	}
	if r.ResponseBody.Valid {
		e.ResponseBody = json.RawMessage(r.ResponseBody.String)
	}
	return e
}

var finished = []string{string(cron.Success), string(cron.Failed)}

// LastExecution reads a job's latest finished execution.
func (r CronStore) LastExecution(ctx context.Context, jobID string) (cron.Execution, bool, error) {
	var row cronExecRow
	err := r.read.NewRaw("SELECT "+cronExecColumns+" FROM cron_executions WHERE job_id = ? AND status IN (?) ORDER BY slot DESC, id DESC LIMIT 1",
		jobID, bun.List(finished)).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return cron.Execution{}, false, nil
	}
	if err != nil {
		return cron.Execution{}, false, fmt.Errorf("read last execution: %w", err)
	}
	return row.domain(), true, nil
}

// Executions lists a job's finished executions, newest slot first.
func (r CronStore) Executions(ctx context.Context, q appcron.ExecutionQuery) ([]cron.Execution, int, error) {
	statuses := finished
	switch {
	case q.Status != "":
		statuses = []string{string(q.Status)}
	case q.WithRetrying:
		statuses = append(slices.Clone(finished), string(cron.Retrying))
	}
	base := r.read.NewSelect().Model((*cronExecRow)(nil)).Where("job_id = ?", q.JobID).Where("status IN (?)", bun.List(statuses))
	if q.TimedOut != nil {
		base = base.Where("timed_out = ?", *q.TimedOut)
	}
	if q.From != nil {
		base = base.Where("started_at >= ?", micros(*q.From))
	}
	if q.To != nil {
		base = base.Where("started_at <= ?", micros(*q.To))
	}
	total, err := base.Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count executions: %w", err)
	}
	var rows []cronExecRow
	if err := base.OrderExpr("slot DESC, id DESC").Limit(q.Limit).Offset(q.Offset).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("list executions: %w", err)
	}
	out := make([]cron.Execution, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, total, nil
}

// ClaimDueJobs locks up to limit due active jobs, earliest first, skipping
// rows other transactions hold.
func (r CronStore) ClaimDueJobs(ctx context.Context, now time.Time, limit int) ([]cron.Job, error) {
	lock := ""
	if r.dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var rows []cronJobRow
	err := r.write.NewRaw("SELECT "+cronJobColumns+" FROM cron_jobs WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at LIMIT ?"+lock,
		micros(now), limit).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("claim due cron jobs: %w", err)
	}
	out := make([]cron.Job, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// callbacksOf are the callback jobs of the outcomes whose execution ids
// were recorded.
func callbacksOf(outcomes []appcron.Outcome, recorded []string) []jobs.EnqueueParams {
	var out []jobs.EnqueueParams
	for _, o := range outcomes {
		if o.Callback != nil && slices.Contains(recorded, o.ExecutionID) {
			out = append(out, *o.Callback)
		}
	}
	return out
}

// setNextRuns moves the jobs' next runs in one statement, and counts the
// runs of those that ran.
func (r CronStore) setNextRuns(ctx context.Context, next []appcron.NextRun) error {
	if len(next) == 0 {
		return nil
	}
	var b strings.Builder
	if r.dialect == Postgres {
		// A join with the new values: one hash lookup per row.
		args := make([]any, 0, 3*len(next))
		b.WriteString("UPDATE cron_jobs AS j SET next_run_at = v.next, runs = j.runs + v.ran FROM (VALUES ")
		for i, n := range next {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?::text, ?::bigint, ?::integer)")
			args = append(args, n.JobID, nullTime(n.At), ranCount(n))
		}
		b.WriteString(") AS v (id, next, ran) WHERE j.id = v.id")
		if _, err := r.write.NewRaw(b.String(), args...).Exec(ctx); err != nil {
			return fmt.Errorf("set next cron runs: %w", err)
		}
		return nil
	}
	args := make([]any, 0, 4*len(next)+1)
	ids := make([]string, len(next))
	b.WriteString("UPDATE cron_jobs SET next_run_at = CAST(CASE id")
	for i, n := range next {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, n.JobID, nullTime(n.At))
		ids[i] = n.JobID
	}
	b.WriteString(" END AS BIGINT), runs = runs + CASE id")
	for _, n := range next {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, n.JobID, ranCount(n))
	}
	b.WriteString(" ELSE 0 END WHERE id IN (?)")
	args = append(args, bun.List(ids))
	if _, err := r.write.NewRaw(b.String(), args...).Exec(ctx); err != nil {
		return fmt.Errorf("set next cron runs: %w", err)
	}
	return nil
}

// ranCount is what a next run adds to its job's runs.
func ranCount(n appcron.NextRun) int {
	if n.Ran {
		return 1
	}
	return 0
}

// insertExecutions stores executions, skipping slots that already have
// one, and returns the ids stored.
func (r CronStore) insertExecutions(ctx context.Context, execs []cron.Execution) ([]string, error) {
	if len(execs) == 0 {
		return nil, nil
	}
	rows := make([]cronExecRow, len(execs))
	for i, e := range execs {
		rows[i] = cronExecRow{
			ID: e.ID, JobID: e.JobID, AccountID: e.AccountID, Slot: micros(e.Slot), StartedAt: micros(e.StartedAt),
			Status: string(e.Status), Attempt: e.Attempt, InterruptedAttempts: e.InterruptedAttempts,
			LeaseOwner:    sql.NullString{String: e.LeaseOwner, Valid: e.LeaseOwner != ""},
			CallStartedAt: nullTime(e.CallStartedAt),
		}
	}
	var ids []string
	_, err := r.write.NewInsert().Model(&rows).On("CONFLICT (job_id, slot) DO NOTHING").Returning("id").Exec(ctx, &ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("insert executions: %w", err)
	}
	return ids, nil
}

// JobsByID reads jobs of any account.
func (r CronStore) JobsByID(ctx context.Context, ids []string) ([]cron.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []cronJobRow
	if err := r.write.NewRaw("SELECT "+cronJobColumns+" FROM cron_jobs WHERE id IN (?)", bun.List(ids)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read cron jobs: %w", err)
	}
	out := make([]cron.Job, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// finishExecutions records call outcomes and returns the ids it recorded:
// one statement on Postgres, one per outcome (cheap inside the
// transaction) on SQLite. Executions no longer running, or whose call
// was started again since (by owner or another process), or deleted with
// their job, are left alone.
func (r CronStore) finishExecutions(ctx context.Context, owner string, results []appcron.Outcome) ([]string, error) {
	if len(results) == 0 {
		return nil, nil
	}
	body := func(o appcron.Outcome) sql.NullString {
		return sql.NullString{String: string(o.ResponseBody), Valid: o.ResponseBody != nil}
	}
	if r.dialect == Postgres {
		var b strings.Builder
		args := make([]any, 0, 8*len(results))
		b.WriteString(`UPDATE cron_executions AS e SET status = v.status, response_code = v.code, response_time_ms = v.ms,
			response_body = v.body, error = v.error, retry_at = v.retry_at, finished_at = v.finished_at, timed_out = v.timed_out,
			lease_owner = NULL, lease_until = NULL
			FROM (VALUES `)
		for i, o := range results {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?::text, ?::text, ?::integer, ?::bigint, ?::text, ?::text, ?::bigint, ?::bigint, ?::boolean, ?::bigint)")
			args = append(args, o.ExecutionID, string(o.Status), o.ResponseCode, o.ResponseTimeMs, body(o), o.Error, nullTime(o.RetryAt), micros(o.FinishedAt), o.TimedOut, micros(o.CallStartedAt))
		}
		b.WriteString(`) AS v (id, status, code, ms, body, error, retry_at, finished_at, timed_out, started) WHERE e.id = v.id AND e.status = 'running' AND e.lease_owner = ? AND e.call_started_at = v.started RETURNING e.id`)
		args = append(args, owner)
		var recorded []string
		if err := r.write.NewRaw(b.String(), args...).Scan(ctx, &recorded); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("record executions: %w", err)
		}
		return recorded, nil
	}
	var recorded []string
	for _, o := range results {
		res, err := r.write.NewRaw(`UPDATE cron_executions SET status = ?, response_code = ?, response_time_ms = ?, response_body = ?, error = ?,
			retry_at = ?, finished_at = ?, timed_out = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ? AND call_started_at = ?`,
			string(o.Status), o.ResponseCode, o.ResponseTimeMs, body(o), o.Error, nullTime(o.RetryAt), micros(o.FinishedAt), o.TimedOut, o.ExecutionID, owner, micros(o.CallStartedAt)).Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("record execution: %w", err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			recorded = append(recorded, o.ExecutionID)
		}
	}
	return recorded, nil
}

// NextWake is the earliest next run of an active job.
func (r CronStore) NextWake(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := r.read.NewRaw(`SELECT MIN(next_run_at) FROM cron_jobs WHERE status = 'active' AND next_run_at IS NOT NULL`).Scan(ctx, &at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read next cron run: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(at.Int64), true, nil
}

// startSet is what a start changes; startWhere which runs start: a
// running one whose call has not started or was cut off once, a retry
// whose time has come, of an active job unless any may. {e} is the
// qualifier of the executions' columns.
const (
	startSet = `attempt = {e}attempt + CASE WHEN {e}status = 'retrying' OR {e}call_started_at IS NOT NULL THEN 1 ELSE 0 END,
		interrupted_attempts = {e}interrupted_attempts + CASE WHEN {e}status = 'running' AND {e}call_started_at IS NOT NULL THEN 1 ELSE 0 END,
		status = 'running', started_at = ?, call_started_at = ?, lease_owner = ?, lease_until = NULL`
	// A run held by the scheduler of an older release (a lease_until
	// still to come; this release sets none) is left to it.
	startWhere = `{e}id IN (?) AND ({e}lease_until IS NULL OR {e}lease_until < ?) AND (
		({e}status = 'running' AND ({e}call_started_at IS NULL OR {e}interrupted_attempts = 0))
		OR ({e}status = 'retrying' AND {e}retry_at <= ?))`
)

// cronStartRow is a started execution with its job's columns (j_
// prefixed).
type cronStartRow struct {
	cronExecRow
	Job cronJobRow `bun:"embed:j_"`
}

// StartRuns starts the calls of the runs that may start and reads their
// jobs: one statement on Postgres (an UPDATE joined with the jobs), two
// on SQLite, whose RETURNING sees only the updated table.
func (r CronStore) StartRuns(ctx context.Context, owner string, at time.Time, ids []string, activeOnly bool) ([]appcron.Started, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if r.dialect == Postgres {
		var rows []cronStartRow
		e := strings.NewReplacer("{e}", "e.")
		err := r.write.NewRaw(`UPDATE cron_executions AS e SET `+e.Replace(startSet)+` FROM cron_jobs AS j
			WHERE j.id = e.job_id AND `+e.Replace(startWhere)+` AND (? OR j.status = 'active')
			RETURNING e.`+strings.ReplaceAll(cronExecColumns, ", ", ", e.")+`, j.`+prefixed(cronJobColumns, "j."),
			micros(at), micros(at), owner, bun.List(ids), micros(at), micros(at), !activeOnly).Scan(ctx, &rows)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("start cron calls: %w", err)
		}
		out := make([]appcron.Started, len(rows))
		for i, row := range rows {
			out[i] = appcron.Started{Execution: row.cronExecRow.domain(), Job: row.Job.domain()}
		}
		return out, nil
	}
	var rows []cronExecRow
	e := strings.NewReplacer("{e}", "")
	err := r.write.NewRaw(`UPDATE cron_executions SET `+e.Replace(startSet)+` WHERE `+e.Replace(startWhere)+`
		AND (? OR EXISTS (SELECT 1 FROM cron_jobs AS j WHERE j.id = cron_executions.job_id AND j.status = 'active'))
		RETURNING `+cronExecColumns,
		micros(at), micros(at), owner, bun.List(ids), micros(at), micros(at), !activeOnly).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("start cron calls: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	jobIDs := make([]string, len(rows))
	for i, row := range rows {
		jobIDs[i] = row.JobID
	}
	jobs, err := r.JobsByID(ctx, jobIDs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]cron.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	out := make([]appcron.Started, 0, len(rows))
	for _, row := range rows {
		if j, ok := byID[row.JobID]; ok {
			out = append(out, appcron.Started{Execution: row.domain(), Job: j})
		}
	}
	return out, nil
}

// AdoptRuns enqueues, in one transaction, the queue jobs of up to limit
// runs that have none because an older release made them
// (appcron.SchedulerRepos): retries its scheduler scheduled, and runs it
// claimed whose lease ended before now (the process died). A claimed run
// is let go of its lease, so that no scheduler of the older release takes
// it over as well. enqueue gives each run's queue job; on Postgres the
// runs another transaction holds are skipped, and a run's job carries a
// unique key, so two replicas adopting at once enqueue one.
func (r CronStore) AdoptRuns(ctx context.Context, now time.Time, limit int, enqueue func(e cron.Execution, next *time.Time) jobs.EnqueueParams) (int, error) {
	contains := "position(convert_to(e.id, 'UTF8') in q.payload) > 0"
	if r.dialect == SQLite {
		contains = "instr(q.payload, e.id) > 0"
	}
	adopted := 0
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		var rows []cronAdoptRow
		err := c.write.NewRaw(`SELECT e.`+strings.ReplaceAll(cronExecColumns, ", ", ", e.")+`, j.next_run_at AS j_next_run_at
			FROM cron_executions AS e JOIN cron_jobs AS j ON j.id = e.job_id
			WHERE (e.status = 'running' AND e.lease_until IS NOT NULL AND e.lease_until < ?)
				OR (e.status = 'retrying' AND NOT EXISTS (SELECT 1 FROM jobs AS q
					WHERE q.kind = ? AND q.state IN (?) AND `+contains+`))
			ORDER BY e.slot LIMIT ?`+CronStore{c}.skipLockedOf("e"),
			micros(now), appcron.RunKind, bun.List(pendingOrRunning), limit).Scan(ctx, &rows)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the runs of an older release: %w", err)
		}
		for _, row := range rows {
			e := row.cronExecRow.domain()
			if e.Status == cron.Running {
				if _, err := c.write.NewRaw(`UPDATE cron_executions SET lease_owner = NULL, lease_until = NULL WHERE id = ?`, e.ID).Exec(ctx); err != nil {
					return fmt.Errorf("adopt cron run: %w", err)
				}
			}
			var next *time.Time
			if row.NextRunAt.Valid {
				n := fromMicros(row.NextRunAt.Int64)
				next = &n
			}
			if _, err := (JobQueue{c}).EnqueueJob(ctx, enqueue(e, next)); err != nil {
				return err
			}
			adopted++
		}
		return nil
	})
	return adopted, err
}

// cronAdoptRow is an execution with its job's next run.
type cronAdoptRow struct {
	cronExecRow
	NextRunAt sql.NullInt64 `bun:"j_next_run_at"`
}

// skipLockedOf is skipLocked for a query of several tables: only the rows
// of table are locked.
func (r CronStore) skipLockedOf(table string) string {
	if r.dialect == Postgres {
		return " FOR UPDATE OF " + table + " SKIP LOCKED"
	}
	return ""
}

// prefixed is columns, each after the first written "col AS prefix_col"
// and each after the first qualified by qual: "id, a" becomes
// "id AS j_id, j.a AS j_a" (the first is qualified by the caller).
func prefixed(columns, qual string) string {
	parts := strings.Split(columns, ", ")
	for i, c := range parts {
		if i > 0 {
			parts[i] = qual + c + " AS j_" + c
			continue
		}
		parts[i] = c + " AS j_" + c
	}
	return strings.Join(parts, ", ")
}

// Execution reads one execution with its job's status.
func (r CronStore) Execution(ctx context.Context, id string) (cron.Execution, cron.Status, bool, error) {
	var rows []cronExecRow
	if err := r.read.NewRaw("SELECT "+cronExecColumns+" FROM cron_executions WHERE id = ?", id).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return cron.Execution{}, "", false, fmt.Errorf("read execution: %w", err)
	}
	if len(rows) == 0 {
		return cron.Execution{}, "", false, nil
	}
	var status []string
	if err := r.read.NewRaw("SELECT status FROM cron_jobs WHERE id = ?", rows[0].JobID).Scan(ctx, &status); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return cron.Execution{}, "", false, fmt.Errorf("read cron job status: %w", err)
	}
	var js cron.Status
	if len(status) == 1 {
		js = cron.Status(status[0])
	}
	return rows[0].domain(), js, true, nil
}

// SettleRun records the outcome of a run not called, if it is as read.
func (r CronStore) SettleRun(ctx context.Context, was cron.Execution, o appcron.Outcome) (bool, error) {
	res, err := r.write.NewRaw(`UPDATE cron_executions SET status = ?, response_code = ?, response_time_ms = ?, response_body = ?, error = ?,
		retry_at = NULL, finished_at = ?, timed_out = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = ? AND attempt = ?`,
		string(o.Status), o.ResponseCode, o.ResponseTimeMs, sql.NullString{String: string(o.ResponseBody), Valid: o.ResponseBody != nil},
		o.Error, micros(o.FinishedAt), o.TimedOut, was.ID, string(was.Status), was.Attempt).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("settle cron run: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DropRun deletes a run whose first call never started.
func (r CronStore) DropRun(ctx context.Context, id string) (bool, error) {
	res, err := r.write.NewRaw(`DELETE FROM cron_executions WHERE id = ? AND status = 'running' AND attempt = 1 AND call_started_at IS NULL`, id).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("drop cron run: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RescheduleRun moves the pending queue job enqueued as job to at.
func (r CronStore) RescheduleRun(ctx context.Context, job jobs.EnqueueParams, at time.Time) error {
	_, err := r.write.NewRaw(`UPDATE jobs SET run_at = ? WHERE kind = ? AND state IN (?) AND payload = ?`,
		micros(at), job.Kind, bun.List(pending), job.Payload).Exec(ctx)
	if err != nil {
		return fmt.Errorf("reschedule cron run: %w", err)
	}
	r.jobsEnqueued()
	return nil
}
