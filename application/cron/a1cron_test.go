package cron_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// stepToNextWake moves the clock to the next run or retry, if it is
// before until, and reports whether it did.
func (b *bundle) stepToNextWake(t *testing.T, until time.Time) bool {
	t.Helper()
	at, ok, err := b.store.Repos().NextWake(context.Background())
	require.NoError(t, err)
	if retry, found := b.nextRetry(t); found && (!ok || retry.Before(at)) {
		at, ok = retry, true
	}
	if !ok || at.After(until) {
		return false
	}
	b.advance(at)
	return true
}

// nextRetry is when the earliest retry of a run is due: its queue job's.
func (b *bundle) nextRetry(t *testing.T) (time.Time, bool) {
	t.Helper()
	var at sql.NullInt64
	require.NoError(t, b.db.Bun().NewRaw("SELECT MIN(run_at) FROM jobs WHERE kind = ? AND state = 'retryable'", appcron.RunKind).
		Scan(context.Background(), &at))
	return time.UnixMicro(at.Int64).UTC(), at.Valid
}

// callbackJobs reads the callback jobs enqueued, oldest first.
func (b *bundle) callbackJobs(t *testing.T) []map[string]any {
	t.Helper()
	var payloads [][]byte
	require.NoError(t, b.db.Bun().NewRaw("SELECT payload FROM jobs WHERE kind = ? ORDER BY id", appcron.CallbackKind).
		Scan(context.Background(), &payloads))
	out := make([]map[string]any, len(payloads))
	for i, p := range payloads {
		require.NoError(t, json.Unmarshal(p, &out[i]), "%s", p)
	}
	return out
}

// A job whose schedule ends after 2 runs (A1Cron's end_type after) runs
// on its first two slots and then has no next run: the clock moves on for
// a week and nothing more is called. A manual run in between is made and
// does not count. Every other day (repeat_every 2) is honoured on the way.
func TestEndsAfterItsRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, options{dialect: dialect, start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
		j := b.create(t, cron.Job{Name: "two runs", Spec: cron.Spec{Frequency: cron.Daily, Every: 2, Time: "09:00", Timezone: "UTC", MaxRuns: 2}})
		require.Equal(t, "2026-03-01", j.Start, "the intervals count from the day it was made")
		require.Equal(t, time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC), *j.NextRunAt)

		require.True(t, b.stepToNextWake(t, b.clock.Now().Add(72*time.Hour)))
		b.waitFinished(t, 1)
		e, err := b.replicas[0].worker.Trigger(context.Background(), b.account, j.ID)
		require.NoError(t, err)
		require.Equal(t, cron.Success, e.Status)
		b.waitFinished(t, 2)
		got, err := b.store.Repos().Job(context.Background(), b.account, j.ID)
		require.NoError(t, err)
		require.Equal(t, 1, got.Runs, "the manual run does not count")
		require.Equal(t, time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC), *got.NextRunAt, "every other day")

		require.True(t, b.stepToNextWake(t, b.clock.Now().Add(72*time.Hour)))
		b.waitFinished(t, 3)
		got, err = b.store.Repos().Job(context.Background(), b.account, j.ID)
		require.NoError(t, err)
		require.Equal(t, 2, got.Runs)
		require.Nil(t, got.NextRunAt, "two runs made: the schedule has ended")
		require.Equal(t, cron.Active, got.Status)

		require.False(t, b.stepToNextWake(t, b.clock.Now().Add(7*24*time.Hour)), "no run is due any more")
		b.advance(b.clock.Now().Add(7 * 24 * time.Hour))
		b.settle()
		require.Equal(t, 3, b.ep.count(), "two scheduled calls and the manual one")
		require.Equal(t, []string{"2026-03-03T09:00:00Z", "2026-03-05T09:00:00Z"}, scheduledSlots(t, b, j.ID, e.ID))

		// Resuming or changing a job whose schedule ended gives it no run;
		// a new schedule counts its runs from zero again.
		got, err = b.svc.Update(context.Background(), b.account, j.ID, appcron.Patch{Name: appcron.Value[string]{Set: true, V: "renamed"}})
		require.NoError(t, err)
		require.Nil(t, got.NextRunAt)
		got, err = b.svc.Update(context.Background(), b.account, j.ID, appcron.Patch{Schedule: appcron.Value[cron.Spec]{Set: true,
			V: cron.Spec{Frequency: cron.Daily, Every: 1, Time: "09:00", MaxRuns: 2}}})
		require.NoError(t, err)
		require.Equal(t, 0, got.Runs)
		require.NotNil(t, got.NextRunAt)
	})
}

// scheduledSlots are the slots of a job's executions but the manual one,
// in order.
func scheduledSlots(t *testing.T, b *bundle, jobID, manualID string) []string {
	t.Helper()
	execs, _, err := b.svc.Executions(context.Background(), b.account, appcron.ExecutionQuery{JobID: jobID, Limit: 100})
	require.NoError(t, err)
	var out []string
	for _, e := range execs {
		if e.ID != manualID {
			out = append([]string{e.Slot.UTC().Format(time.RFC3339)}, out...)
		}
	}
	return out
}

// A failing run is retried after the job's own retry delay (not the
// scheduler's backoff) as many times as it asks; only the final failure
// enqueues the failure callback, and a success enqueues the success
// callback, each with the run's outcome.
func TestRetryDelayAndCallbacks(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, options{dialect: dialect, start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
		b.ep.status = func(n int) int {
			if n <= 3 {
				return 503
			}
			return 200
		}
		j := b.create(t, cron.Job{
			Spec: cron.Spec{Frequency: cron.Daily, Time: "13:00", Timezone: "UTC"}, Retries: 2, RetryDelay: 90 * time.Second,
			SuccessURL: b.ep.srv.URL + "/ok", FailureURL: b.ep.srv.URL + "/failed",
		})
		for n := 1; n <= 3; n++ {
			require.True(t, b.stepToNextWake(t, b.clock.Now().Add(2*time.Hour)))
			require.Eventually(t, func() bool { return b.ep.count() == n }, 10*time.Second, 5*time.Millisecond)
			if n < 3 {
				require.Eventually(t, func() bool {
					at, ok := b.nextRetry(t)
					return ok && at.Equal(b.clock.Now().Add(90*time.Second))
				}, 10*time.Second, 5*time.Millisecond, "retry %d comes 90 s after the failure", n)
				require.Empty(t, b.callbackJobs(t), "no callback while retries are left")
			}
		}
		b.waitFinished(t, 1)
		execs, _, err := b.svc.Executions(context.Background(), b.account, appcron.ExecutionQuery{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, execs, 1)
		require.Equal(t, cron.Failed, execs[0].Status)
		require.Equal(t, 3, execs[0].Attempt)
		cbs := b.callbackJobs(t)
		require.Len(t, cbs, 1)
		require.Equal(t, b.ep.srv.URL+"/failed", cbs[0]["url"])
		require.Equal(t, execs[0].ID, cbs[0]["id"])
		body := cbs[0]["body"].(map[string]any)
		require.Equal(t, map[string]any{"cron_job_id": j.ID, "execution_id": execs[0].ID, "status": "failure", "response_code": float64(503),
			"response_time_ms": body["response_time_ms"], "executed_at": execs[0].StartedAt.Format(time.RFC3339Nano),
			"error_message": "the endpoint answered 503"}, body)

		e, err := b.replicas[0].worker.Trigger(context.Background(), b.account, j.ID)
		require.NoError(t, err)
		require.Equal(t, cron.Success, e.Status)
		cbs = b.callbackJobs(t)
		require.Len(t, cbs, 2)
		require.Equal(t, b.ep.srv.URL+"/ok", cbs[1]["url"])
		require.Equal(t, "success", cbs[1]["body"].(map[string]any)["status"])

		_, err = b.replicas[0].worker.Trigger(context.Background(), insertAccount(t, b.db, b.clock.Now()), j.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's job: %v", err)
	})
}
