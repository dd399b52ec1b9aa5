package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// The runs a release from before cron runs were queue jobs left behind
// (its scheduler made the calls itself and kept its claims in
// lease_owner and lease_until) get a queue job: its retries, due at their
// time, and its claims whose lease ended, let go of it. A claim whose
// lease runs is left to its scheduler, by AdoptRuns and by StartRuns, and
// so are this release's runs, which have queue jobs. A second adoption
// adopts nothing.
func TestCronRunsOfAnOlderReleaseAreAdopted(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		db := dbtest.Open(t, dialect)
		s := db.CronStore()
		now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		acct := account.Account{ID: ident.New(ident.Account), Name: "Old", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.AccountStore().InsertAccount(ctx, acct))
		next := now.Add(time.Hour)
		job := cron.Job{ID: ident.New(ident.CronJob), AccountID: acct.ID, EndpointURL: "https://example.com/hook", Method: "POST",
			Spec:    cron.Spec{Frequency: cron.Custom, CustomSchedule: "0 * * * *", Timezone: "UTC"},
			Timeout: 30 * time.Second, Retries: 2, Status: cron.Active, CreatedAt: now, NextRunAt: &next}
		require.NoError(t, s.Decide(ctx, func(context.Context, appcron.TxReads) (writes.Batch, error) {
			return writes.Batch{CronJobs: []cron.Job{job}}, nil
		}))
		exec := func(minutesAgo int) cron.Execution {
			slot := now.Add(-time.Duration(minutesAgo) * time.Minute)
			return cron.Execution{ID: ident.New(ident.Execution), JobID: job.ID, AccountID: acct.ID, Slot: slot, StartedAt: slot,
				Status: cron.Running, Attempt: 1}
		}
		oldRetry, oldDead, oldLive, newRetry, newRun := exec(5), exec(4), exec(3), exec(2), exec(1)
		withJob := func(e cron.Execution) appcron.Run {
			return appcron.Run{Execution: e, Job: jobs.EnqueueParams{Kind: appcron.RunKind, Payload: []byte(`{"execution":"` + e.ID + `"}`),
				RunAt: e.Slot, AccountID: acct.ID, MaxAttempts: appcron.RunAttempts}}
		}
		_, err := s.Claim(ctx, func(context.Context, appcron.Claims) (appcron.Runs, error) {
			return appcron.Runs{Runs: []appcron.Run{{Execution: oldRetry}, {Execution: oldDead}, {Execution: oldLive}, withJob(newRetry), withJob(newRun)}}, nil
		})
		require.NoError(t, err)
		retryAt := now.Add(10 * time.Second)
		exec1 := func(q string, args ...any) {
			_, err := db.Bun().NewRaw(q, args...).Exec(ctx)
			require.NoError(t, err)
		}
		exec1("UPDATE cron_executions SET status = 'retrying', retry_at = ? WHERE id IN (?)", retryAt.UnixMicro(), bun.List([]string{oldRetry.ID, newRetry.ID}))
		exec1("UPDATE cron_executions SET lease_owner = 'old', lease_until = ?, call_started_at = ? WHERE id = ?",
			now.Add(-time.Second).UnixMicro(), now.Add(-4*time.Minute).UnixMicro(), oldDead.ID)
		exec1("UPDATE cron_executions SET lease_owner = 'old', lease_until = ? WHERE id = ?", now.Add(3*time.Second).UnixMicro(), oldLive.ID)

		adopt := func() int {
			n, err := s.AdoptRuns(ctx, now, 100, func(e cron.Execution, n *time.Time) jobs.EnqueueParams {
				require.Equal(t, next, *n, "the run's job's next run")
				runAt := now
				if e.Status == cron.Retrying {
					runAt = *e.RetryAt
				}
				return jobs.EnqueueParams{Kind: appcron.RunKind, Payload: []byte(`{"execution":"` + e.ID + `"}`), RunAt: runAt,
					AccountID: e.AccountID, MaxAttempts: appcron.RunAttempts, UniqueKey: appcron.RunKind + ":" + e.ID}
			})
			require.NoError(t, err)
			return n
		}
		require.Equal(t, 2, adopt(), "the old retry and the claim of a dead scheduler")
		require.Zero(t, adopt(), "adopted once")

		var adopted []struct {
			Key   string `bun:"unique_key"`
			RunAt int64  `bun:"run_at"`
		}
		require.NoError(t, db.Bun().NewRaw("SELECT unique_key, run_at FROM jobs WHERE unique_key IS NOT NULL ORDER BY unique_key").Scan(ctx, &adopted))
		want := map[string]int64{appcron.RunKind + ":" + oldRetry.ID: retryAt.UnixMicro(), appcron.RunKind + ":" + oldDead.ID: now.UnixMicro()}
		require.Len(t, adopted, 2)
		for _, a := range adopted {
			require.Equal(t, want[a.Key], a.RunAt, "%s is due at its retry, or at once", a.Key)
		}

		// The dead scheduler's claim is let go of; its call, started, is
		// made again as an interrupted attempt. The live claim is left.
		got, err := s.StartRuns(ctx, "new", now, []string{oldDead.ID, oldLive.ID}, true)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, oldDead.ID, got[0].Execution.ID)
		require.Equal(t, 2, got[0].Execution.Attempt)
		require.Equal(t, 1, got[0].Execution.InterruptedAttempts)
		got, err = s.StartRuns(ctx, "new", now.Add(4*time.Second), []string{oldLive.ID}, true)
		require.NoError(t, err)
		require.Len(t, got, 1, "a claim whose lease ended starts")
	})
}
