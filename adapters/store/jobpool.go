package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// What the runners of the cluster share beyond the jobs themselves: who
// runs (job_runners), so that an account's share is a share of every live
// runner's workers, and each endpoint's circuit breaker and stall mark
// (job_breakers), so that what one replica learns of an endpoint holds for
// all. Times are on the database clock (Postgres's; SQLite is one
// process, its clock), so a replica whose clock is off changes none of
// them.

// runnerLive is how long after its last heartbeat a runner counts as live;
// runners beat every second or so (adapters/jobs).
const runnerLive = 3 * time.Second

// runnerRetention is how long the row of a runner gone without a word is
// kept.
const runnerRetention = time.Hour

// nowSQL is the database clock in unix microseconds as an SQL expression:
// Postgres's clock, or on SQLite the process's wall clock as a literal
// (not Options.Now, the clock of the queue's rows).
func (r *Conn) nowSQL() string {
	if r.dialect == Postgres {
		return pgNowMicros
	}
	return strconv.FormatInt(micros(time.Now()), 10)
}

// HeartbeatRunner records that worker's runner of pool, with its workers,
// lives now, and returns what the live runners of the pool hold, this one
// included. Rows of runners gone for an hour are deleted.
func (r JobQueue) HeartbeatRunner(ctx context.Context, worker, pool string, workers int) (jobs.RunnerPool, error) {
	now := r.nowSQL()
	var out []struct {
		Runners int `bun:"runners"`
		Workers int `bun:"workers"`
	}
	if _, err := r.write.NewRaw(`INSERT INTO job_runners (worker, pool, workers, heartbeat_at) VALUES (?, ?, ?, `+now+`)
		ON CONFLICT (worker, pool) DO UPDATE SET workers = excluded.workers, heartbeat_at = excluded.heartbeat_at`,
		worker, pool, workers).Exec(ctx); err != nil {
		return jobs.RunnerPool{}, fmt.Errorf("heartbeat of runner %s: %w", worker, err)
	}
	err := r.write.NewRaw(`SELECT count(*) AS runners, COALESCE(sum(workers), 0) AS workers
		FROM job_runners WHERE pool = ? AND (heartbeat_at > `+now+` - ? OR worker = ?)`,
		pool, runnerLive.Microseconds(), worker).Scan(ctx, &out)
	if err != nil {
		return jobs.RunnerPool{}, fmt.Errorf("read the runners of pool %s: %w", pool, err)
	}
	if _, err := r.write.NewRaw(`DELETE FROM job_runners WHERE pool = ? AND heartbeat_at < `+now+` - ?`,
		pool, runnerRetention.Microseconds()).Exec(ctx); err != nil {
		return jobs.RunnerPool{}, fmt.Errorf("delete gone runners: %w", err)
	}
	if len(out) != 1 {
		return jobs.RunnerPool{Runners: 1, Workers: workers}, nil
	}
	return jobs.RunnerPool{Runners: out[0].Runners, Workers: out[0].Workers}, nil
}

// RemoveRunner deletes worker's runner of pool: a runner that stops counts
// no more at once.
func (r JobQueue) RemoveRunner(ctx context.Context, worker, pool string) error {
	if _, err := r.write.NewRaw(`DELETE FROM job_runners WHERE worker = ? AND pool = ?`, worker, pool).Exec(ctx); err != nil {
		return fmt.Errorf("remove runner %s: %w", worker, err)
	}
	return nil
}

// Breakers lists the endpoints that have shared state: a breaker that
// counts failures or is open, or a stall mark.
func (r JobQueue) Breakers(ctx context.Context) ([]jobs.Breaker, error) {
	var rows []struct {
		Key      string `bun:"endpoint_key"`
		Failures int    `bun:"failures"`
		Open     bool   `bun:"open"`
		OpenFor  int64  `bun:"open_for"`
		Probing  bool   `bun:"probing"`
		Stalled  bool   `bun:"stalled"`
	}
	err := r.read.NewRaw(`SELECT endpoint_key, failures, opened_until IS NOT NULL AS open,
			COALESCE(opened_until - `+r.nowSQL()+`, 0) AS open_for,
			probe_job IS NOT NULL AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_breakers.probe_job AND jobs.state = '`+string(jobs.StateRunning)+`') AS probing,
			stalled_at IS NOT NULL AS stalled
		FROM job_breakers`).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read endpoint breakers: %w", err)
	}
	out := make([]jobs.Breaker, len(rows))
	for i, row := range rows {
		out[i] = jobs.Breaker{EndpointKey: row.Key, Failures: row.Failures, Open: row.Open,
			OpenFor: time.Duration(row.OpenFor) * time.Microsecond, Probing: row.Probing, Stalled: row.Stalled}
	}
	return out, nil
}

// TakeProbe makes worker the prober of the endpoint's breaker if it is
// half-open (open, its time passed, no probe running), and reports
// whether it did: the breaker stays shut to every other claimer for hold,
// while worker claims its probe (EndpointProbeClaimed) or gives it up
// (EndpointProbeUnused).
func (r JobQueue) TakeProbe(ctx context.Context, worker, endpoint string, hold time.Duration) (bool, error) {
	now := r.nowSQL()
	var taken []string
	err := r.write.NewRaw(`UPDATE job_breakers SET probe_owner = ?, probe_job = NULL, opened_until = `+now+` + ?, updated_at = `+now+`
		WHERE endpoint_key = ? AND opened_until <= `+now+`
			AND (probe_job IS NULL OR NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_breakers.probe_job AND jobs.state = ?))
		RETURNING endpoint_key`, worker, hold.Microseconds(), endpoint, jobs.StateRunning).Scan(ctx, &taken)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("take the probe of %s: %w", endpoint, err)
	}
	return len(taken) == 1, nil
}

// RecordEndpoint applies what worker learned of an endpoint to its shared
// state, under policy p (see jobs.EndpointOutcome):
//
//   - a success deletes the endpoint's row: the breaker closes, its count
//     of failures and its stall mark go;
//   - an answer clears the stall mark; worker's probe answered closes the
//     breaker;
//   - a failure counts one more while the breaker is closed, opening it
//     for p.Open at p.Failures; worker's probe failed opens it again, for
//     twice as long as the time before, up to p.MaxOpen; a failure while
//     it is open (an attempt that started before) counts nothing;
//   - a stall marks the endpoint stalled;
//   - worker's probe claimed runs while that job runs; unused, the breaker
//     is half-open again at once.
func (r JobQueue) RecordEndpoint(ctx context.Context, worker string, e jobs.EndpointEvent, p jobs.BreakerPolicy) error {
	now := r.nowSQL()
	var err error
	exec := func(query string, args ...any) {
		if err == nil {
			_, err = r.write.NewRaw(query, args...).Exec(ctx)
		}
	}
	key := e.EndpointKey
	switch e.Outcome {
	case jobs.EndpointSucceeded:
		exec(`DELETE FROM job_breakers WHERE endpoint_key = ?`, key)
	case jobs.EndpointAnswered:
		if e.Probe != 0 {
			exec(`DELETE FROM job_breakers WHERE endpoint_key = ? AND probe_job = ?`, key, e.Probe)
		}
		exec(`UPDATE job_breakers SET stalled_at = NULL, updated_at = `+now+` WHERE endpoint_key = ? AND stalled_at IS NOT NULL`, key)
		exec(`DELETE FROM job_breakers WHERE endpoint_key = ? AND failures = 0 AND opened_until IS NULL AND stalled_at IS NULL`, key)
	case jobs.EndpointFailed:
		if e.Probe != 0 {
			err = r.probeFailed(ctx, key, e.Probe, p)
			break
		}
		// A new row opens at once only when one failure is the threshold.
		values := `VALUES (?, 1, 0, NULL, ` + now + `)`
		if p.Failures <= 1 {
			values = `VALUES (?, 1, 1, ` + now + ` + ` + strconv.FormatInt(p.Open.Microseconds(), 10) + `, ` + now + `)`
		}
		opens := fmt.Sprintf("job_breakers.failures + 1 >= %d", p.Failures)
		exec(`INSERT INTO job_breakers (endpoint_key, failures, openings, opened_until, updated_at) `+values+`
			ON CONFLICT (endpoint_key) DO UPDATE SET failures = job_breakers.failures + 1,
				openings = CASE WHEN `+opens+` THEN 1 ELSE job_breakers.openings END,
				opened_until = CASE WHEN `+opens+` THEN `+now+` + ? END,
				updated_at = excluded.updated_at
			WHERE job_breakers.opened_until IS NULL`,
			key, p.Open.Microseconds())
	case jobs.EndpointStalled:
		exec(`INSERT INTO job_breakers (endpoint_key, stalled_at, updated_at) VALUES (?, `+now+`, `+now+`)
			ON CONFLICT (endpoint_key) DO UPDATE SET stalled_at = COALESCE(job_breakers.stalled_at, excluded.stalled_at),
				updated_at = excluded.updated_at`, key)
	case jobs.EndpointProbeClaimed:
		exec(`UPDATE job_breakers SET probe_job = ?, opened_until = `+now+`, updated_at = `+now+`
			WHERE endpoint_key = ? AND probe_owner = ?`, e.Probe, key, worker)
	case jobs.EndpointProbeUnused:
		exec(`UPDATE job_breakers SET probe_owner = NULL, probe_job = NULL, opened_until = `+now+`, updated_at = `+now+`
			WHERE endpoint_key = ? AND probe_owner = ? AND (probe_job IS NULL OR probe_job = ?)`, key, worker, e.Probe)
	default:
		return fmt.Errorf("endpoint %s: unknown outcome %d", key, e.Outcome)
	}
	if err != nil {
		return fmt.Errorf("record endpoint %s: %w", key, err)
	}
	return nil
}

// probeFailed opens the breaker of probe's endpoint again, for the open
// time of one more opening in a row.
func (r JobQueue) probeFailed(ctx context.Context, key string, probe int64, p jobs.BreakerPolicy) error {
	now := r.nowSQL()
	var openings []int
	err := r.write.NewRaw(`UPDATE job_breakers SET openings = openings + 1, probe_owner = NULL, probe_job = NULL,
			opened_until = `+now+` + ?, updated_at = `+now+`
		WHERE endpoint_key = ? AND probe_job = ? RETURNING openings`, p.Open.Microseconds(), key, probe).Scan(ctx, &openings)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if len(openings) != 1 || openings[0] <= 1 {
		return nil
	}
	_, err = r.write.NewRaw(`UPDATE job_breakers SET opened_until = `+now+` + ? WHERE endpoint_key = ? AND openings = ? AND probe_job IS NULL`,
		outage.Backoff(openings[0], p.Open, p.MaxOpen).Microseconds(), key, openings[0]).Exec(ctx)
	return err
}

// PruneBreakers deletes the shared state of endpoints that nothing
// updated since before: endpoints no job calls any more.
func (r JobQueue) PruneBreakers(ctx context.Context, before time.Time) error {
	// before is the runner's clock; an hour's difference does not matter
	// for rows a day old.
	if _, err := r.write.NewRaw(`DELETE FROM job_breakers WHERE updated_at < ?`, micros(before)).Exec(ctx); err != nil {
		return fmt.Errorf("prune endpoint breakers: %w", err)
	}
	return nil
}
