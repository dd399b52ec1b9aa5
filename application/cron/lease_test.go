package cron_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// claimAsDeadReplica enqueues a job's due slot and claims its queue job as
// a runner named owner would, leased until a second after the slot, then
// "dies": nothing calls it. With
// started, it dies mid-call.
func (b *bundle) claimAsDeadReplica(t *testing.T, j cron.Job, owner string, started bool) {
	t.Helper()
	ctx := context.Background()
	now := b.clock.Now()
	next := j.NextRunAt.Add(time.Hour)
	e := cron.Execution{ID: ident.New(ident.Execution), JobID: j.ID, AccountID: j.AccountID, Slot: *j.NextRunAt, StartedAt: now,
		Status: cron.Running, Attempt: 1}
	payload, err := json.Marshal(map[string]any{"execution": e.ID, "slot": j.NextRunAt.UnixMicro(), "next": next.UnixMicro()})
	require.NoError(t, err)
	ids, err := b.store.Claim(ctx, func(context.Context, appcron.Claims) (appcron.Runs, error) {
		return appcron.Runs{Runs: []appcron.Run{{Execution: e, Job: jobs.EnqueueParams{Kind: appcron.RunKind, Payload: payload,
			RunAt: *j.NextRunAt, AccountID: j.AccountID, MaxAttempts: appcron.RunAttempts}}},
			NextRuns: []appcron.NextRun{{JobID: j.ID, At: &next}}}, nil
	})
	require.NoError(t, err)
	require.Len(t, ids, 1)
	claimed, err := b.db.JobQueue().ClaimJobs(ctx, owner, []jobs.Lease{{Kind: appcron.RunKind, Until: j.NextRunAt.Add(time.Second)}}, 10,
		*j.NextRunAt, jobs.ClaimFilter{})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	if started {
		got, err := b.store.Repos().StartRuns(ctx, owner, now, []string{e.ID}, true)
		require.NoError(t, err)
		require.Len(t, got, 1)
	}
}

func (b *bundle) execution(t *testing.T, jobID string) cron.Execution {
	t.Helper()
	execs, _, err := b.svc.Executions(context.Background(), b.account, appcron.ExecutionQuery{JobID: jobID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, execs, 1)
	return execs[0]
}

// TestTakeOverOfADeadReplicasRuns: runs claimed by a runner that then
// died are left alone while its lease holds, and taken over once it has
// expired (the queue's rescue): the one whose call had not started is made as attempt 1, the
// one cut off mid-call is retried once with the same key (attempt 2, one
// interrupted attempt).
func TestTakeOverOfADeadReplicasRuns(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start})
	daily := cron.Spec{Frequency: cron.Daily, Time: "08:01", Timezone: "UTC"}
	before := b.create(t, cron.Job{Spec: daily})
	mid := b.create(t, cron.Job{Spec: daily})
	// Claimed at 08:00:57, before this replica's lookahead; the lease
	// lasts until 08:01:01.
	b.clock.Set(start.Add(57 * time.Second))
	b.claimAsDeadReplica(t, before, "sch_dead", false)
	b.claimAsDeadReplica(t, mid, "sch_dead", true)

	b.advance(start.Add(time.Minute + 500*time.Millisecond))
	b.settle()
	require.Zero(t, b.ep.count(), "the dead replica's lease still holds")

	b.advance(start.Add(time.Minute + 2*time.Second))
	b.waitFinished(t, 2)
	calls := b.ep.snapshot()
	require.Len(t, calls, 2)
	keys := map[string]bool{calls[0].key: true, calls[1].key: true}
	slot := start.Add(time.Minute)
	require.True(t, keys[cron.IdempotencyKey(before.ID, slot)])
	require.True(t, keys[cron.IdempotencyKey(mid.ID, slot)], "the retry carries the slot's key")

	e := b.execution(t, before.ID)
	require.Equal(t, cron.Success, e.Status)
	require.Equal(t, 1, e.Attempt)
	require.Zero(t, e.InterruptedAttempts)
	e = b.execution(t, mid.ID)
	require.Equal(t, cron.Success, e.Status)
	require.Equal(t, 2, e.Attempt)
	require.Equal(t, 1, e.InterruptedAttempts)

	b.advance(start.Add(time.Minute + 30*time.Second))
	b.settle()
	require.Equal(t, 2, b.ep.count(), "taken-over runs are called once")
}

// TestLeasesRenewedWhileCalling: a call that outlasts the lease many times
// over keeps its run; the other replica does not take it over.
func TestLeasesRenewedWhileCalling(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	b := setup(t, options{start: start, replicas: 2})
	j := b.create(t, cron.Job{EndpointURL: b.ep.srv.URL + "/hang", Timeout: 3 * time.Second,
		Spec: cron.Spec{Frequency: cron.Daily, Time: "08:01", Timezone: "UTC"}})
	b.advance(start.Add(time.Minute))
	var started bool
	for deadline := time.Now().Add(5 * time.Second); !started && time.Now().Before(deadline); {
		n := 0
		for _, e := range b.allExecutions(t) {
			if e.CallStartedAt != nil {
				n++
			}
		}
		started = n == 1
		time.Sleep(5 * time.Millisecond)
	}
	require.True(t, started, "the call started")
	// Ten simulated seconds, a third of a lease at a time, each given the
	// real time a renewal takes under make test's load (60 ms was too
	// little: renewals there took up to 350 ms, and the run was taken over).
	for i := 1; i <= 10; i++ {
		b.advance(start.Add(time.Minute + time.Duration(i)*time.Second))
		time.Sleep(400 * time.Millisecond)
	}
	execs := b.allExecutions(t)
	require.Len(t, execs, 1)
	require.Equal(t, j.ID, execs[0].JobID)
	require.Equal(t, 1, execs[0].Attempt, "the run was not taken over")
	require.Zero(t, execs[0].InterruptedAttempts)
}

// TestClockJumps: a clock that jumps back does not run a slot again, and
// one that jumps forward is downtime: the latest missed slot runs once.
func TestClockJumps(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 6, 1, 8, 0, 30, 0, time.UTC)
	b := setup(t, options{start: start})
	j := b.create(t, cron.Job{Spec: cron.Spec{Frequency: cron.Custom, Timezone: "UTC", CustomSchedule: "* * * * *"}})
	b.advance(time.Date(2026, 6, 1, 8, 1, 0, 0, time.UTC))
	b.waitFinished(t, 1)
	b.advance(time.Date(2026, 6, 1, 7, 50, 0, 0, time.UTC)) // back 11 minutes
	b.settle()
	require.Equal(t, 1, b.ep.count(), "nothing runs again after a jump back")
	b.advance(time.Date(2026, 6, 1, 8, 1, 30, 0, time.UTC))
	b.settle()
	require.Equal(t, 1, b.ep.count(), "08:01 is not run twice")
	b.advance(time.Date(2026, 6, 1, 8, 2, 0, 0, time.UTC))
	b.waitFinished(t, 2)
	b.advance(time.Date(2026, 6, 1, 10, 2, 20, 0, time.UTC)) // forward two hours
	b.waitFinished(t, 3)
	b.settle()
	require.Equal(t, []string{"2026-06-01T08:01:00Z", "2026-06-01T08:02:00Z", "2026-06-01T10:02:00Z"}, b.slots(t, j.ID))
	keys := map[string]bool{}
	for _, c := range b.ep.snapshot() {
		require.False(t, keys[c.key], "key %s called twice", c.key)
		keys[c.key] = true
	}
	got, err := b.svc.Get(context.Background(), b.account, j.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 6, 1, 10, 3, 0, 0, time.UTC), got.Job.NextRunAt.UTC())
}

// flakyStore fails every transaction and read while down is set.
type flakyStore struct {
	appcron.Store
	down     *atomic.Bool
	attempts *atomic.Int64
}

var errDown = errors.New("connection refused")

func (f flakyStore) Claim(ctx context.Context, claim func(ctx context.Context, tx appcron.Claims) (appcron.Runs, error)) ([]string, error) {
	if f.down.Load() {
		f.attempts.Add(1)
		return nil, errDown
	}
	return f.Store.Claim(ctx, claim)
}

func (f flakyStore) Repos() appcron.Repos { return flakyRepos{Repos: f.Store.Repos(), down: f.down} }

type flakyRepos struct {
	appcron.Repos
	down *atomic.Bool
}

func (f flakyRepos) NextWake(ctx context.Context) (time.Time, bool, error) {
	if f.down.Load() {
		return time.Time{}, false, errDown
	}
	return f.Repos.NextWake(ctx)
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDatabaseOutage: while the database is away (a store failing every
// transaction and read stands for it) the enqueuer backs off (fewer
// attempts than polls) and logs the outage once, and its end once; then it
// resumes by itself and makes the run that fell due meanwhile.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var down atomic.Bool
	var attempts atomic.Int64
	down.Store(true)
	logs := &syncBuffer{}
	r, err := startReplica(replicaConfig{db: b.db, store: b.store, enqueue: flakyStore{Store: b.store, down: &down, attempts: &attempts},
		clock: appcron.SystemClock{}, enqueuePoll: 20 * time.Millisecond, logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	defer r.stop()

	// A job due 1.5 s from now, while the database is away.
	now := time.Now()
	due := now.Add(1500 * time.Millisecond)
	j := cron.Job{ID: ident.New(ident.CronJob), AccountID: b.account, EndpointURL: b.ep.srv.URL + "/hook", Method: "GET",
		Spec:   cron.Spec{Frequency: cron.Daily, Time: "00:00", Timezone: "UTC"},
		Status: cron.Active, CreatedAt: now, NextRunAt: &due}
	require.NoError(t, b.store.Decide(context.Background(), func(context.Context, appcron.TxReads) (writes.Batch, error) {
		return writes.Batch{CronJobs: []cron.Job{j}}, nil
	}))
	time.Sleep(2 * time.Second)
	failed := attempts.Load()
	down.Store(false)
	require.Less(t, failed, int64(25), "backed off: 2 s of polls every 20 ms would be 100 attempts")
	deadline := time.Now().Add(10 * time.Second)
	for b.ep.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 1, b.ep.count(), "the run due during the outage is made once the database is back")
	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "cron: the scheduler failed"), out)
	require.Equal(t, 1, strings.Count(out, "cron: the scheduler works again"), out)
}
