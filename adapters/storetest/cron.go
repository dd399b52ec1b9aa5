package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// CronOpen gives a cron test its own empty store and a way to add the
// accounts its jobs belong to.
type CronOpen func(t *testing.T) (appcron.Store, func(ctx context.Context, a account.Account) error)

func newCronJob(accountID string, next time.Time) cron.Job {
	dow := 3
	return cron.Job{
		ID: ident.New(ident.CronJob), AccountID: accountID, EndpointURL: "https://example.com/hook", Method: "POST",
		Headers: map[string]string{"X-Token": "t"}, Body: json.RawMessage(`{"a":1}`),
		Spec:    cron.Spec{Frequency: cron.Weekly, Time: "09:30", Timezone: "Europe/London", DayOfWeek: &dow},
		Timeout: 45 * time.Second, Retries: 2, Status: cron.Active, CreatedAt: at, NextRunAt: &next,
	}
}

// owner is the process that starts the calls of the tests' runs.
const owner = "sch_a"

func cronExec(jobID, accountID string, slot time.Time) cron.Execution {
	return cron.Execution{ID: ident.New(ident.Execution), JobID: jobID, AccountID: accountID, Slot: slot, StartedAt: slot,
		Status: cron.Running, Attempt: 1}
}

// runOf is a new execution's run: the execution and its queue job.
func runOf(e cron.Execution) appcron.Run {
	return appcron.Run{Execution: e, Job: jobs.EnqueueParams{Kind: appcron.RunKind, Payload: []byte(`{"execution":"` + e.ID + `"}`),
		RunAt: e.Slot, AccountID: e.AccountID, MaxAttempts: appcron.RunAttempts}}
}

// insertJob stores j through the door a job's creation takes.
func insertJob(ctx context.Context, s appcron.Store, j cron.Job) error {
	return s.Decide(ctx, func(context.Context, appcron.TxReads) (writes.Batch, error) {
		return writes.Batch{CronJobs: []cron.Job{j}}, nil
	})
}

// saveJob saves every field of j through ChangeJob, as a job's change
// does (j.Version must differ from the stored one).
func saveJob(ctx context.Context, s appcron.Store, j cron.Job) error {
	_, err := s.Repos().ChangeJob(ctx, j.AccountID, j.ID, func(cron.Job) (cron.Job, error) { return j, nil })
	return err
}

// insertExecutions and setNextRuns write what an enqueuer's claim
// writes, through Claim.
func insertExecutions(ctx context.Context, s appcron.Store, execs []cron.Execution) ([]string, error) {
	return s.Claim(ctx, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		runs := make([]appcron.Run, len(execs))
		for i, e := range execs {
			runs[i] = runOf(e)
		}
		return appcron.Runs{Runs: runs}, nil
	})
}

func setNextRuns(ctx context.Context, s appcron.Store, next []appcron.NextRun) error {
	_, err := s.Claim(ctx, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		return appcron.Runs{NextRuns: next}, nil
	})
	return err
}

// started starts the runs ids at at as by, all of them.
func started(t *testing.T, s appcron.Store, by string, at time.Time, ids ...string) []appcron.Started {
	t.Helper()
	got, err := s.Repos().StartRuns(context.Background(), by, at, ids, true)
	require.NoError(t, err)
	require.Len(t, got, len(ids))
	return got
}

// Cron runs the contract of the cron store.
func Cron(t *testing.T, open CronOpen) {
	setup := func(t *testing.T) (appcron.Store, string, string) {
		s, add := open(t)
		a, b := newAccount("A"), newAccount("B")
		require.NoError(t, add(context.Background(), a))
		require.NoError(t, add(context.Background(), b))
		return s, a.ID, b.ID
	}

	t.Run("ChangeJobSavesWhatTheChangeMakes", func(t *testing.T) {
		t.Parallel()
		s, acc, other := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at.Add(time.Hour))
		require.NoError(t, insertJob(ctx, s, j))

		same, err := s.Repos().ChangeJob(ctx, acc, j.ID, func(cur cron.Job) (cron.Job, error) {
			require.Equal(t, j, cur)
			cur.Retries = 9
			return cur, nil
		})
		require.NoError(t, err)
		require.Equal(t, j, same, "a change that leaves the version saves nothing")

		upd := at.Add(time.Minute)
		want := j
		want.Status, want.NextRunAt, want.UpdatedAt, want.Version = cron.Paused, nil, &upd, 1
		saved, err := s.Repos().ChangeJob(ctx, acc, j.ID, func(cur cron.Job) (cron.Job, error) {
			cur.Status, cur.NextRunAt, cur.UpdatedAt, cur.Version = cron.Paused, nil, &upd, cur.Version+1
			return cur, nil
		})
		require.NoError(t, err)
		require.Equal(t, want, saved)
		got, err := s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)

		boom := errors.New("boom")
		_, err = s.Repos().ChangeJob(ctx, acc, j.ID, func(cur cron.Job) (cron.Job, error) {
			cur.Version++
			return cur, boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.Repos().ChangeJob(ctx, other, j.ID, func(cur cron.Job) (cron.Job, error) { return cur, nil })
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's job is not found: %v", err)
		got, err = s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "failed changes save nothing")
	})

	t.Run("JobRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, acc, other := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at.Add(time.Hour))
		require.NoError(t, insertJob(ctx, s, j))
		got, err := s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, j, got)

		_, err = s.Repos().Job(ctx, other, j.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's job is not found: %v", err)

		upd := at.Add(time.Minute)
		j.Status, j.NextRunAt, j.UpdatedAt, j.Body, j.Headers, j.DayOfWeek = cron.Paused, nil, &upd, nil, nil, nil
		j.Frequency, j.Version = cron.Daily, 1
		require.NoError(t, saveJob(ctx, s, j))
		got, err = s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, j, got)

		wrong := j
		wrong.AccountID = other
		require.True(t, failure.Is(saveJob(ctx, s, wrong), failure.KindNotFound))
		require.True(t, failure.Is(s.Repos().DeleteJob(ctx, other, j.ID), failure.KindNotFound))
		require.NoError(t, s.Repos().DeleteJob(ctx, acc, j.ID))
		require.True(t, failure.Is(s.Repos().DeleteJob(ctx, acc, j.ID), failure.KindNotFound))
	})

	t.Run("ListFilterAndPage", func(t *testing.T) {
		t.Parallel()
		s, acc, other := setup(t)
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			j := newCronJob(acc, at)
			j.CreatedAt = at.Add(time.Duration(i) * time.Second)
			if i%2 == 1 {
				j.Status, j.NextRunAt = cron.Paused, nil
			}
			require.NoError(t, insertJob(ctx, s, j))
			ids = append(ids, j.ID)
		}
		require.NoError(t, insertJob(ctx, s, newCronJob(other, at)))
		all, total, err := s.Repos().Jobs(ctx, appcron.JobQuery{AccountID: acc, Limit: 2, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, 5, total)
		require.Len(t, all, 2)
		require.Equal(t, []string{ids[1], ids[2]}, []string{all[0].ID, all[1].ID}, "oldest first")
		paused, total, err := s.Repos().Jobs(ctx, appcron.JobQuery{AccountID: acc, Status: cron.Paused, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Equal(t, []string{ids[1], ids[3]}, []string{paused[0].ID, paused[1].ID})
		n, err := s.Repos().CountJobs(ctx, acc)
		require.NoError(t, err)
		require.Equal(t, 5, n)
	})

	t.Run("EachSlotOnce", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		first := cronExec(j.ID, acc, at)
		ids, err := insertExecutions(ctx, s, []cron.Execution{first})
		require.NoError(t, err)
		require.Equal(t, []string{first.ID}, ids)
		again, later := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute))
		ids, err = insertExecutions(ctx, s, []cron.Execution{again, later})
		require.NoError(t, err)
		require.Equal(t, []string{later.ID}, ids, "a slot that already has an execution is skipped")
	})

	t.Run("ClaimAndAdvance", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		due, later, paused := newCronJob(acc, at), newCronJob(acc, at.Add(time.Hour)), newCronJob(acc, at)
		paused.Status = cron.Paused
		for _, j := range []cron.Job{due, later, paused} {
			require.NoError(t, insertJob(ctx, s, j))
		}
		wake, ok, err := s.Repos().NextWake(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, at, wake)

		var got []cron.Job
		_, err = s.Claim(ctx, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
			got, err = tx.ClaimDueJobs(ctx, at, 10)
			return appcron.Runs{}, err
		})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, due.ID, got[0].ID)
		next := at.Add(2 * time.Hour)
		require.NoError(t, setNextRuns(ctx, s, []appcron.NextRun{{JobID: due.ID, At: &next}, {JobID: later.ID, At: nil}}))
		j, err := s.Repos().Job(ctx, acc, due.ID)
		require.NoError(t, err)
		require.Equal(t, next, *j.NextRunAt)
		j, err = s.Repos().Job(ctx, acc, later.ID)
		require.NoError(t, err)
		require.Nil(t, j.NextRunAt)
		wake, ok, err = s.Repos().NextWake(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, next, wake)
	})

	t.Run("RollbackLeavesNothing", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		boom := errors.New("boom")
		next := at.Add(time.Hour)
		_, err := s.Claim(ctx, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
			got, err := tx.ClaimDueJobs(ctx, at, 10)
			require.NoError(t, err)
			require.Len(t, got, 1)
			return appcron.Runs{Runs: []appcron.Run{runOf(cronExec(j.ID, acc, at))}, NextRuns: []appcron.NextRun{{JobID: j.ID, At: &next}}}, boom
		})
		require.ErrorIs(t, err, boom)
		got, err := s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, at, *got.NextRunAt)
		ids, err := insertExecutions(ctx, s, []cron.Execution{cronExec(j.ID, acc, at)})
		require.NoError(t, err)
		require.Len(t, ids, 1, "the rolled-back execution is gone")
	})

	t.Run("ClaimWritesItsRunsAndSaysWhichExecutionsItStored", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		taken := cronExec(j.ID, acc, at)
		_, err := insertExecutions(ctx, s, []cron.Execution{taken})
		require.NoError(t, err)
		require.Equal(t, 1, countRunJobs(t, s))
		again, fresh := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute))
		next := at.Add(2 * time.Minute)
		stored, err := s.Claim(ctx, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
			return appcron.Runs{
				Runs:     []appcron.Run{runOf(again), runOf(fresh)},
				NextRuns: []appcron.NextRun{{JobID: j.ID, At: &next}},
			}, nil
		})
		require.NoError(t, err)
		require.Equal(t, []string{fresh.ID}, stored, "a slot that already has an execution is skipped")
		require.Equal(t, 2, countRunJobs(t, s), "and so is its queue job")
		got, err := s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, next, *got.NextRunAt)
	})

	t.Run("ConcurrentClaimsAreDisjoint", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		const jobs = 60
		for range jobs {
			require.NoError(t, insertJob(ctx, s, newCronJob(acc, at)))
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var n int
					_, err := s.Claim(ctx, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
						got, err := tx.ClaimDueJobs(ctx, at, 7)
						if err != nil {
							return appcron.Runs{}, err
						}
						n = len(got)
						next := at.Add(time.Hour)
						runs := make([]appcron.NextRun, len(got))
						for i, j := range got {
							runs[i] = appcron.NextRun{JobID: j.ID, At: &next}
						}
						mu.Lock()
						for _, j := range got {
							seen[j.ID]++
						}
						mu.Unlock()
						return appcron.Runs{NextRuns: runs}, nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, jobs)
		for id, n := range seen {
			require.Equal(t, 1, n, "job %s claimed %d times", id, n)
		}
	})

	t.Run("ExecutionsStartFinishRetry", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		e1, e2, e3 := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute)), cronExec(j.ID, acc, at.Add(2*time.Minute))
		_, err := insertExecutions(ctx, s, []cron.Execution{e1, e2, e3})
		require.NoError(t, err)
		_, ok, err := s.Repos().LastExecution(ctx, j.ID)
		require.NoError(t, err)
		require.False(t, ok, "running executions are not shown")

		runs := started(t, s, owner, at, e1.ID, e2.ID, e3.ID)
		for _, r := range runs {
			require.Equal(t, j.ID, r.Job.ID, "a started run comes with its job")
			require.Equal(t, 1, r.Execution.Attempt)
			require.Equal(t, at, *r.Execution.CallStartedAt)
			require.Equal(t, owner, r.Execution.LeaseOwner)
		}
		retryAt := at.Add(5 * time.Minute)
		recorded, err := s.Record(ctx, owner, []appcron.Outcome{
			{ExecutionID: e1.ID, CallStartedAt: at, Status: cron.Success, ResponseCode: 200, ResponseTimeMs: 12, ResponseBody: []byte(`{"ok":true}`), FinishedAt: at},
			{ExecutionID: e2.ID, CallStartedAt: at, Status: cron.Failed, ResponseCode: 500, ResponseTimeMs: 7, ResponseBody: []byte(`"oops"`), Error: "the endpoint answered 500", FinishedAt: at},
			{ExecutionID: e3.ID, CallStartedAt: at, Status: cron.Retrying, ResponseCode: 503, Error: "the endpoint answered 503", RetryAt: &retryAt, FinishedAt: at},
		})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{e1.ID, e2.ID, e3.ID}, recorded)
		list, total, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Equal(t, e2.ID, list[0].ID, "newest slot first")
		require.Equal(t, cron.Failed, list[0].Status)
		require.Equal(t, "the endpoint answered 500", list[0].Error)
		require.JSONEq(t, `"oops"`, string(list[0].ResponseBody))
		require.JSONEq(t, `{"ok":true}`, string(list[1].ResponseBody))
		require.Equal(t, 200, list[1].ResponseCode)
		require.Equal(t, int64(12), list[1].ResponseTimeMs)
		ok1, total, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Status: cron.Success, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, e1.ID, ok1[0].ID)
		last, ok, err := s.Repos().LastExecution(ctx, j.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, e2.ID, last.ID)

		// A retry starts once its time has come, as one more attempt.
		none, err := s.Repos().StartRuns(ctx, owner, retryAt.Add(-time.Second), []string{e1.ID, e3.ID}, true)
		require.NoError(t, err)
		require.Empty(t, none, "a finished run and a retry not due do not start")
		retried := started(t, s, "sch_b", retryAt, e3.ID)
		require.Equal(t, 2, retried[0].Execution.Attempt)
		require.Zero(t, retried[0].Execution.InterruptedAttempts)
		require.Equal(t, cron.Running, retried[0].Execution.Status)
		require.Equal(t, "sch_b", retried[0].Execution.LeaseOwner)
		require.Equal(t, retryAt, retried[0].Execution.StartedAt)

		// The outcome of another start is not recorded: a former owner's,
		// and the same owner's earlier start.
		for _, o := range []appcron.Outcome{
			{ExecutionID: e3.ID, CallStartedAt: retryAt, Status: cron.Success, FinishedAt: retryAt},
			{ExecutionID: e3.ID, CallStartedAt: at, Status: cron.Success, FinishedAt: retryAt},
		} {
			by := owner
			if o.CallStartedAt.Equal(at) {
				by = "sch_b"
			}
			recorded, err = s.Record(ctx, by, []appcron.Outcome{o})
			require.NoError(t, err)
			require.Empty(t, recorded)
		}
		recorded, err = s.Record(ctx, "sch_b", []appcron.Outcome{{ExecutionID: e3.ID, CallStartedAt: retryAt, Status: cron.Success, ResponseCode: 200, FinishedAt: retryAt}})
		require.NoError(t, err)
		require.Equal(t, []string{e3.ID}, recorded)

		got, err := s.Repos().JobsByID(ctx, []string{j.ID, "crn_missing"})
		require.NoError(t, err)
		require.Len(t, got, 1)

		require.NoError(t, s.Repos().DeleteJob(ctx, acc, j.ID))
		_, total, err = s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total, "executions go with their job")
	})

	// A run whose call started and was cut off (its process died) starts
	// again once, as an interrupted attempt; cut off again, it does not
	// start, and is settled as read.
	t.Run("CallsCutOffStartAgainOnce", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		e := cronExec(j.ID, acc, at)
		_, err := insertExecutions(ctx, s, []cron.Execution{e})
		require.NoError(t, err)
		started(t, s, owner, at, e.ID)
		later := at.Add(5 * time.Second)
		again := started(t, s, "sch_b", later, e.ID)[0].Execution
		require.Equal(t, 2, again.Attempt)
		require.Equal(t, 1, again.InterruptedAttempts)
		require.Equal(t, later, again.StartedAt)
		none, err := s.Repos().StartRuns(ctx, "sch_c", later.Add(time.Second), []string{e.ID}, true)
		require.NoError(t, err)
		require.Empty(t, none, "a call cut off twice does not start again")

		read, jobStatus, ok, err := s.Repos().Execution(ctx, e.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, cron.Active, jobStatus)
		require.Equal(t, 2, read.Attempt)
		stale := read
		stale.Attempt = 1
		done, err := s.Repos().SettleRun(ctx, stale, appcron.Outcome{ExecutionID: e.ID, Status: cron.Failed, Error: "gone", FinishedAt: later})
		require.NoError(t, err)
		require.False(t, done, "a run no longer as read is left alone")
		done, err = s.Repos().SettleRun(ctx, read, appcron.Outcome{ExecutionID: e.ID, Status: cron.Failed, Error: "gone", FinishedAt: later})
		require.NoError(t, err)
		require.True(t, done)
		failed, _, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Status: cron.Failed, Limit: 10})
		require.NoError(t, err)
		require.Len(t, failed, 1)
		require.Equal(t, "gone", failed[0].Error)
		_, _, ok, err = s.Repos().Execution(ctx, "exe_missing")
		require.NoError(t, err)
		require.False(t, ok)
	})

	// Runs of a paused job start only when asked for any job (a manual
	// run); one whose call never started can be dropped without a trace.
	t.Run("PausedJobsRunsAndDrops", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		j.Status = cron.Paused
		require.NoError(t, insertJob(ctx, s, j))
		a, b := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute))
		_, err := insertExecutions(ctx, s, []cron.Execution{a, b})
		require.NoError(t, err)
		none, err := s.Repos().StartRuns(ctx, owner, at, []string{a.ID}, true)
		require.NoError(t, err)
		require.Empty(t, none, "a paused job's run does not start")
		got, err := s.Repos().StartRuns(ctx, owner, at, []string{a.ID}, false)
		require.NoError(t, err)
		require.Len(t, got, 1, "unless any job's run may")
		dropped, err := s.Repos().DropRun(ctx, a.ID)
		require.NoError(t, err)
		require.False(t, dropped, "a run whose call started stays")
		dropped, err = s.Repos().DropRun(ctx, b.ID)
		require.NoError(t, err)
		require.True(t, dropped)
		_, _, ok, err := s.Repos().Execution(ctx, b.ID)
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("RescheduleRunMovesItsQueueJob", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		e, other := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute))
		_, err := insertExecutions(ctx, s, []cron.Execution{e, other})
		require.NoError(t, err)
		to := at.Add(time.Hour)
		require.NoError(t, s.Repos().RescheduleRun(ctx, runOf(e).Job, to))
		require.Equal(t, []time.Time{other.Slot, to}, runJobTimes(t, s))
	})
}

// runJobs reads the store's queue: how many run jobs it holds, and when
// they are due, earliest first.
func countRunJobs(t *testing.T, s appcron.Store) int {
	t.Helper()
	return len(runJobTimes(t, s))
}

func runJobTimes(t *testing.T, s appcron.Store) []time.Time {
	t.Helper()
	q, ok := s.(interface {
		RunJobTimes(ctx context.Context) ([]time.Time, error)
	})
	require.True(t, ok, "the store under test tells when its run jobs are due")
	got, err := q.RunJobTimes(context.Background())
	require.NoError(t, err)
	return got
}
