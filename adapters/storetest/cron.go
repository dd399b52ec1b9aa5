package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// owner is the scheduler that holds the executions cronExec makes.
const owner = "sch_a"

func cronExec(jobID, accountID string, slot time.Time) cron.Execution {
	return cron.Execution{ID: ident.New(ident.Execution), JobID: jobID, AccountID: accountID, Slot: slot, StartedAt: slot,
		Status: cron.Running, Attempt: 1, LeaseOwner: owner, LeaseUntil: slot.Add(time.Minute)}
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

// insertExecutions, setNextRuns and finishExecutions write what a
// scheduler's claim writes, through Claim.
func insertExecutions(ctx context.Context, s appcron.Store, execs []cron.Execution) ([]string, error) {
	return s.Claim(ctx, owner, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		return appcron.Runs{Executions: execs}, nil
	})
}

func setNextRuns(ctx context.Context, s appcron.Store, next []appcron.NextRun) error {
	_, err := s.Claim(ctx, owner, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		return appcron.Runs{NextRuns: next}, nil
	})
	return err
}

func finishExecutions(ctx context.Context, s appcron.Store, by string, results []appcron.Outcome) error {
	_, err := s.Claim(ctx, by, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		return appcron.Runs{Finished: results}, nil
	})
	return err
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

		got, err := s.Repos().ClaimDueJobs(ctx, at, 10)
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
		_, err := s.Claim(ctx, owner, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
			got, err := tx.ClaimDueJobs(ctx, at, 10)
			require.NoError(t, err)
			require.Len(t, got, 1)
			return appcron.Runs{Executions: []cron.Execution{cronExec(j.ID, acc, at)}, NextRuns: []appcron.NextRun{{JobID: j.ID, At: &next}}}, boom
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
		again, fresh := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute))
		next := at.Add(2 * time.Minute)
		stored, err := s.Claim(ctx, owner, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
			return appcron.Runs{
				Executions: []cron.Execution{again, fresh},
				NextRuns:   []appcron.NextRun{{JobID: j.ID, At: &next}},
				Finished:   []appcron.Outcome{{ExecutionID: taken.ID, Status: cron.Success, ResponseCode: 200, FinishedAt: at}},
			}, nil
		})
		require.NoError(t, err)
		require.Equal(t, []string{fresh.ID}, stored, "a slot that already has an execution is skipped")
		got, err := s.Repos().Job(ctx, acc, j.ID)
		require.NoError(t, err)
		require.Equal(t, next, *got.NextRunAt)
		last, ok, err := s.Repos().LastExecution(ctx, j.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, taken.ID, last.ID, "the outcome was recorded as the owner's")
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
					_, err := s.Claim(ctx, owner, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
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

	t.Run("ExecutionsFinishRetryExpire", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		e1, e2, e3, e4 := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute)), cronExec(j.ID, acc, at.Add(2*time.Minute)), cronExec(j.ID, acc, at.Add(3*time.Minute))
		_, err := insertExecutions(ctx, s, []cron.Execution{e1, e2, e3, e4})
		require.NoError(t, err)
		_, ok, err := s.Repos().LastExecution(ctx, j.ID)
		require.NoError(t, err)
		require.False(t, ok, "running executions are not shown")

		retryAt := at.Add(5 * time.Minute)
		_, err = s.Claim(ctx, owner, func(context.Context, appcron.Claims) (appcron.Runs, error) {
			return appcron.Runs{Finished: []appcron.Outcome{
				{ExecutionID: e1.ID, Status: cron.Success, ResponseCode: 200, ResponseTimeMs: 12, ResponseBody: []byte(`{"ok":true}`), FinishedAt: at},
				{ExecutionID: e2.ID, Status: cron.Failed, ResponseCode: 500, ResponseTimeMs: 7, ResponseBody: []byte(`"oops"`), Error: "the endpoint answered 500", FinishedAt: at},
				{ExecutionID: e3.ID, Status: cron.Retrying, ResponseCode: 503, Error: "the endpoint answered 503", RetryAt: &retryAt, FinishedAt: at},
			}}, nil
		})
		require.NoError(t, err)
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

		wake, _, err := s.Repos().NextWake(ctx)
		require.NoError(t, err)
		require.Equal(t, at, wake, "the job's next run is earlier than the retry")
		lease := appcron.Lease{Owner: "sch_b", Until: retryAt.Add(3 * time.Second)}
		none, err := s.Repos().ClaimRetries(ctx, retryAt.Add(-time.Second), lease, 10)
		require.NoError(t, err)
		require.Empty(t, none)
		retried, err := s.Repos().ClaimRetries(ctx, retryAt, lease, 10)
		require.NoError(t, err)
		require.Len(t, retried, 1)
		require.Equal(t, e3.ID, retried[0].ID)
		require.Equal(t, 2, retried[0].Attempt)
		require.Equal(t, cron.Running, retried[0].Status)
		require.Equal(t, lease.Owner, retried[0].LeaseOwner)
		require.Equal(t, lease.Until, retried[0].LeaseUntil)
		require.Nil(t, retried[0].CallStartedAt)
		require.Equal(t, retryAt, *retried[0].RetryAt, "the retry time is kept, for the call to wait for")

		// e4's call is cut off twice: taken over once, it is retried;
		// taken over again, it is failed.
		started, err := s.Repos().StartCalls(ctx, owner, at, []string{e4.ID})
		require.NoError(t, err)
		require.Equal(t, []string{e4.ID}, started)
		now := at.Add(4*time.Minute + time.Second)
		taken, failedN, err := s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_b", Until: now.Add(3 * time.Second)}, "gone", 10)
		require.NoError(t, err)
		require.Zero(t, failedN)
		require.Len(t, taken, 1, "only e4 is past its lease")
		require.Equal(t, e4.ID, taken[0].ID)
		require.Equal(t, 2, taken[0].Attempt)
		require.Equal(t, 1, taken[0].InterruptedAttempts)
		require.Equal(t, now, taken[0].StartedAt)
		require.Nil(t, taken[0].CallStartedAt)
		started, err = s.Repos().StartCalls(ctx, "sch_b", now, []string{e4.ID})
		require.NoError(t, err)
		require.Equal(t, []string{e4.ID}, started)
		now = now.Add(10 * time.Second)
		taken, failedN, err = s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_c", Until: now.Add(3 * time.Second)}, "gone", 10)
		require.NoError(t, err)
		require.Empty(t, taken)
		require.Equal(t, 1, failedN)
		failed, _, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Status: cron.Failed, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, e4.ID, failed[0].ID)
		require.Equal(t, "gone", failed[0].Error)

		// A result for an execution that is no longer running is ignored.
		require.NoError(t, finishExecutions(ctx, s, owner, []appcron.Outcome{{ExecutionID: e4.ID, Status: cron.Success, ResponseCode: 200, FinishedAt: at}}))
		failed, _, err = s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Status: cron.Failed, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, e4.ID, failed[0].ID)

		got, err := s.Repos().JobsByID(ctx, []string{j.ID, "crn_missing"})
		require.NoError(t, err)
		require.Len(t, got, 1)

		require.NoError(t, s.Repos().DeleteJob(ctx, acc, j.ID))
		_, total, err = s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total, "executions go with their job")
	})

	t.Run("LeasesRenewExpireAndTakeOver", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		a, b, c := cronExec(j.ID, acc, at), cronExec(j.ID, acc, at.Add(time.Minute)), cronExec(j.ID, acc, at.Add(2*time.Minute))
		a.LeaseUntil, b.LeaseUntil, c.LeaseUntil, c.LeaseOwner = at.Add(3*time.Second), at.Add(3*time.Second), at.Add(3*time.Second), "sch_b"
		_, err := insertExecutions(ctx, s, []cron.Execution{a, b, c})
		require.NoError(t, err)
		started, err := s.Repos().StartCalls(ctx, owner, at, []string{b.ID})
		require.NoError(t, err)
		require.Equal(t, []string{b.ID}, started)

		n, err := s.Repos().RenewExecutionLeases(ctx, appcron.Lease{Owner: owner, Until: at.Add(10 * time.Second)})
		require.NoError(t, err)
		require.Equal(t, 2, n)
		now := at.Add(5 * time.Second)
		taken, failed, err := s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_b", Until: now.Add(3 * time.Second)}, "gone", 10)
		require.NoError(t, err)
		require.Zero(t, failed)
		require.Empty(t, taken, "renewed leases hold, and a scheduler does not take over its own runs")

		taken, _, err = s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_c", Until: now.Add(3 * time.Second)}, "gone", 10)
		require.NoError(t, err)
		require.Len(t, taken, 1)
		require.Equal(t, c.ID, taken[0].ID)
		require.Equal(t, 1, taken[0].Attempt, "a call that never started is not an attempt")
		require.Zero(t, taken[0].InterruptedAttempts)
		require.Equal(t, "sch_c", taken[0].LeaseOwner)
		require.Equal(t, now.Add(3*time.Second), taken[0].LeaseUntil)

		started, err = s.Repos().StartCalls(ctx, "sch_b", now, []string{c.ID})
		require.NoError(t, err)
		require.Empty(t, started, "the former owner may not start the call")
		started, err = s.Repos().StartCalls(ctx, "sch_c", now, []string{c.ID})
		require.NoError(t, err)
		require.Equal(t, []string{c.ID}, started)
		started, err = s.Repos().StartCalls(ctx, "sch_c", now, []string{c.ID})
		require.NoError(t, err)
		require.Empty(t, started, "a call starts once")

		require.NoError(t, finishExecutions(ctx, s, "sch_b", []appcron.Outcome{{ExecutionID: c.ID, Status: cron.Failed, Error: "stale", FinishedAt: now}}))
		_, total, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total, "the former owner's result is ignored")
		require.NoError(t, finishExecutions(ctx, s, "sch_c", []appcron.Outcome{{ExecutionID: c.ID, Status: cron.Success, ResponseCode: 200, FinishedAt: now}}))
		last, ok, err := s.Repos().LastExecution(ctx, j.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, c.ID, last.ID)
		require.Equal(t, cron.Success, last.Status)

		now = at.Add(11 * time.Second)
		taken, failed, err = s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_c", Until: now.Add(3 * time.Second)}, "gone", 10)
		require.NoError(t, err)
		require.Zero(t, failed)
		require.Len(t, taken, 2)
		byID := map[string]cron.Execution{taken[0].ID: taken[0], taken[1].ID: taken[1]}
		require.Equal(t, 1, byID[a.ID].Attempt)
		require.Zero(t, byID[a.ID].InterruptedAttempts)
		require.Equal(t, a.StartedAt, byID[a.ID].StartedAt)
		require.Equal(t, 2, byID[b.ID].Attempt, "a call cut off is retried as a new attempt")
		require.Equal(t, 1, byID[b.ID].InterruptedAttempts)
		require.Nil(t, byID[b.ID].CallStartedAt)
		require.Equal(t, now, byID[b.ID].StartedAt)
	})

	// More runs cut off twice than one take-over may fail: those left
	// over wait for the next take-over, and none is called a third time.
	t.Run("RunsCutOffTwiceAreNeverCalledAgain", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		var ids []string
		var execs []cron.Execution
		for i := range 3 {
			e := cronExec(j.ID, acc, at.Add(time.Duration(i)*time.Minute))
			e.Attempt, e.InterruptedAttempts, e.LeaseUntil = 2, 1, at.Add(3*time.Second)
			execs = append(execs, e)
			ids = append(ids, e.ID)
		}
		_, err := insertExecutions(ctx, s, execs)
		require.NoError(t, err)
		started, err := s.Repos().StartCalls(ctx, owner, at, ids)
		require.NoError(t, err)
		require.Len(t, started, 3)
		now := at.Add(2 * time.Minute)
		for i := range 3 {
			taken, failedN, err := s.Repos().TakeOverExpired(ctx, now, appcron.Lease{Owner: "sch_b", Until: now.Add(3 * time.Second)}, "gone", 1)
			require.NoError(t, err)
			require.Equal(t, 1, failedN, "take-over %d fails one run", i)
			require.Empty(t, taken, "take-over %d: a run cut off twice is not called again", i)
		}
		_, total, err := s.Repos().Executions(ctx, appcron.ExecutionQuery{JobID: j.ID, Status: cron.Failed, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 3, total)
	})

	t.Run("ConcurrentTakeOversAreDisjoint", func(t *testing.T) {
		t.Parallel()
		s, acc, _ := setup(t)
		ctx := context.Background()
		j := newCronJob(acc, at)
		require.NoError(t, insertJob(ctx, s, j))
		const runs = 40
		execs := make([]cron.Execution, runs)
		for i := range execs {
			execs[i] = cronExec(j.ID, acc, at.Add(time.Duration(i)*time.Minute))
			execs[i].LeaseUntil = at
		}
		_, err := insertExecutions(ctx, s, execs)
		require.NoError(t, err)
		now := at.Add(time.Second)
		var mu sync.Mutex
		seen := map[string][]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lease := appcron.Lease{Owner: fmt.Sprintf("sch_%d", w), Until: now.Add(time.Hour)}
				for {
					var n int
					_, err := s.Claim(ctx, lease.Owner, func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error) {
						taken, _, err := tx.TakeOverExpired(ctx, now, lease, "gone", 3)
						n = len(taken)
						mu.Lock()
						for _, e := range taken {
							seen[e.ID] = append(seen[e.ID], lease.Owner)
						}
						mu.Unlock()
						return appcron.Runs{}, err
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
		require.Len(t, seen, runs)
		for id, owners := range seen {
			require.Len(t, owners, 1, "run %s taken over by %v", id, owners)
		}
	})
}
