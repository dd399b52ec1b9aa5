package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/retention"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// RetentionFixture is the history pruner's store on an empty database,
// with the stores that write the history it prunes.
type RetentionFixture struct {
	Store retention.Store
	Lock  retention.Lock
	// OtherLock is the lock of a second connection pool to the same
	// database: another replica's.
	OtherLock retention.Lock
	Accounts  accounts.Store
	Webhooks  webhooks.Store
	Cron      appcron.Store
	Mailbox   appemail.Mailbox
	// Count runs a SELECT COUNT(*) ... with ? placeholders.
	Count func(t *testing.T, query string, args ...any) int
}

// Retention runs the contract of retention.Store and retention.Lock
// against the fixture that open returns; open must give each call its
// own empty, migrated database.
func Retention(t *testing.T, open func(t *testing.T) RetentionFixture) {
	// The cutoff: rows recorded before it are old.
	before := at.Add(30 * 24 * time.Hour)
	justOld, edge, young := before.Add(-time.Microsecond), before, before.Add(time.Second)

	t.Run("DeletesExactlyWhatIsOlderThanTheCutoff", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		h := historyOf(t, f)
		acc, other := h.account(t), h.account(t)

		oldEvent := h.delivered(t, acc, justOld, webhook.Succeeded, 2)
		edgeEvent := h.delivered(t, acc, edge, webhook.Failed, 1)
		plain := h.event(t, acc, before.Add(-time.Hour))
		youngEvent := h.event(t, acc, young)
		othersOld := h.delivered(t, other, justOld, webhook.Succeeded, 1)

		job := h.cronJob(t, acc)
		oldRun := h.execution(t, job, justOld, cron.Success)
		edgeRun := h.execution(t, job, edge, cron.Failed)

		h.keep(t, acc, justOld, "old")
		h.keep(t, acc, edge, "edge")
		h.keep(t, other, justOld, "other's")

		pruned := pruneAll(t, f, acc, before, 1000)
		require.Equal(t, map[retention.Kind]int{retention.WebhookDeliveries: 1, retention.Events: 2, retention.CronExecutions: 1, retention.SandboxEmails: 1}, pruned)

		require.False(t, h.eventKept(t, oldEvent.event), "an event recorded a microsecond before the cutoff goes")
		require.False(t, h.deliveryKept(t, acc, oldEvent.delivery.ID), "its finished delivery goes")
		require.Zero(t, h.attempts(t, oldEvent.delivery), "with its attempts")
		require.False(t, h.eventKept(t, plain), "an old event without deliveries goes")
		require.True(t, h.eventKept(t, edgeEvent.event), "an event recorded at the cutoff stays")
		require.True(t, h.deliveryKept(t, acc, edgeEvent.delivery.ID), "a delivery recorded at the cutoff stays")
		require.Equal(t, 1, h.attempts(t, edgeEvent.delivery))
		require.True(t, h.eventKept(t, youngEvent))

		require.False(t, h.executionKept(t, job, oldRun), "a run started before the cutoff goes")
		require.True(t, h.executionKept(t, job, edgeRun), "a run started at the cutoff stays")

		page, err := f.Mailbox.Kept(ctx, acc, 0, 10)
		require.NoError(t, err)
		require.Equal(t, 1, page.Total, "the mailbox's count follows")
		require.Len(t, page.Emails, 1)
		require.Equal(t, "edge", page.Emails[0].Subject)

		require.True(t, h.eventKept(t, othersOld.event), "another account's history is its own")
		require.True(t, h.deliveryKept(t, other, othersOld.delivery.ID))
		page, err = f.Mailbox.Kept(ctx, other, 0, 10)
		require.NoError(t, err)
		require.Equal(t, 1, page.Total)

		require.Equal(t, map[retention.Kind]int{}, nonZero(pruneAll(t, f, acc, before, 1000)), "a second pass finds nothing")
	})

	t.Run("WhatIsStillNeededStays", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		h := historyOf(t, f)
		acc := h.account(t)
		long := before.Add(-365 * 24 * time.Hour)

		untried := h.delivered(t, acc, long, webhook.Pending, 0)
		retrying := h.delivered(t, acc, long, webhook.Pending, 3)
		// An old event whose delivery is younger than the cutoff (they
		// are stamped apart): the delivery keeps it.
		straddling := h.event(t, acc, justOld)
		straddlingDelivery := h.deliver(t, straddling, young, webhook.Succeeded, 1)
		job := h.cronJob(t, acc)
		running := h.execution(t, job, long, cron.Running)
		again := h.execution(t, job, long.Add(time.Minute), cron.Retrying)
		h.event(t, acc, young)

		pruneAll(t, f, acc, before, 1000)
		for _, d := range []deliveredEvent{untried, retrying} {
			require.True(t, h.deliveryKept(t, acc, d.delivery.ID), "a pending delivery stays, however old")
			require.True(t, h.eventKept(t, d.event), "and the event it sends")
		}
		require.Equal(t, 3, h.attempts(t, retrying.delivery), "and its attempts")
		require.True(t, h.eventKept(t, straddling), "an event a delivery still refers to stays")
		require.True(t, h.deliveryKept(t, acc, straddlingDelivery.ID))
		require.True(t, h.executionKept(t, job, running), "a running cron execution stays")
		require.True(t, h.executionKept(t, job, again), "and a retrying one")

		// Once finished, the delivery goes, and its event with it.
		h.finish(t, retrying.delivery, webhook.Failed)
		pruned := pruneAll(t, f, acc, before, 1000)
		require.Equal(t, 1, pruned[retention.WebhookDeliveries])
		require.Equal(t, 1, pruned[retention.Events])
		require.False(t, h.deliveryKept(t, acc, retrying.delivery.ID))
		require.Zero(t, h.attempts(t, retrying.delivery))
		require.False(t, h.eventKept(t, retrying.event))
	})

	t.Run("TheNewestEventOfTheLogStays", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		h := historyOf(t, f)
		acc := h.account(t)
		first := h.event(t, acc, before.Add(-2*time.Hour))
		last := h.event(t, acc, before.Add(-time.Hour))
		pruneAll(t, f, acc, before, 1000)
		require.False(t, h.eventKept(t, first))
		require.True(t, h.eventKept(t, last), "positions in the log never go back, so its newest event stays")
	})

	t.Run("TheWalkGoesPastWhatStays", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		h := historyOf(t, f)
		acc := h.account(t)
		var kept, gone []deliveredEvent
		for i := range 5 {
			kept = append(kept, h.delivered(t, acc, justOld.Add(-time.Duration(10-i)*time.Minute), webhook.Pending, 0))
		}
		for i := range 3 {
			gone = append(gone, h.delivered(t, acc, justOld.Add(-time.Duration(3-i)*time.Minute), webhook.Succeeded, 1))
		}
		h.event(t, acc, young)
		steps := 0
		q := retention.Query{Kind: retention.WebhookDeliveries, AccountID: acc, Before: before, Limit: 2}
		for deleted := 0; ; steps++ {
			step, err := f.Store.PruneHistory(context.Background(), q)
			require.NoError(t, err)
			deleted += step.Deleted
			if step.Done {
				require.Equal(t, 3, deleted)
				break
			}
			require.Greater(t, step.Next, q.After, "the walk moves on")
			q.After = step.Next
		}
		require.Equal(t, 4, steps, "four batches of two over the eight deliveries, then an empty one that ends the walk")
		for _, d := range kept {
			require.True(t, h.deliveryKept(t, acc, d.delivery.ID))
		}
		for _, d := range gone {
			require.False(t, h.deliveryKept(t, acc, d.delivery.ID))
		}
	})

	t.Run("OneProcessAtATime", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		ran, err := f.Lock.Exclusively(ctx, func(ctx context.Context) error {
			other, err := f.OtherLock.Exclusively(ctx, func(context.Context) error {
				return fmt.Errorf("ran while another process prunes")
			})
			require.NoError(t, err)
			require.False(t, other, "another replica does not prune meanwhile")
			self, err := f.Lock.Exclusively(ctx, func(context.Context) error {
				return fmt.Errorf("ran twice at once")
			})
			require.NoError(t, err)
			require.False(t, self, "nor does this one a second time")
			return nil
		})
		require.NoError(t, err)
		require.True(t, ran)
		ran, err = f.OtherLock.Exclusively(ctx, func(context.Context) error { return nil })
		require.NoError(t, err)
		require.True(t, ran, "once released, another replica takes it")
		boom := fmt.Errorf("boom")
		_, err = f.Lock.Exclusively(ctx, func(context.Context) error { return boom })
		require.ErrorIs(t, err, boom)
		ran, err = f.OtherLock.Exclusively(ctx, func(context.Context) error { return nil })
		require.NoError(t, err)
		require.True(t, ran, "a failed pass releases it too")
	})

	t.Run("PruningUnderLoadLosesNoPendingDelivery", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		ctx := context.Background()
		h := historyOf(t, f)
		acc := h.account(t)
		const writers, each = 4, 60
		var (
			mu       sync.Mutex
			pending  = map[string]deliveredEvent{}
			finished = map[string]deliveredEvent{}
			replays  atomic.Int64
			done     atomic.Bool
			wg       sync.WaitGroup
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				var mine []deliveredEvent
				// isPending says which of mine are pending; the others are
				// finished, or pruned once finished.
				isPending := map[string]bool{}
				for i := range each {
					// Everything is older than the cutoff: only being
					// pending keeps a delivery.
					d := h.delivered(t, acc, justOld.Add(-time.Duration(w*each+i)*time.Second), webhook.Pending, 0)
					mine, isPending[d.delivery.ID] = append(mine, d), true
					pick := mine[rng.IntN(len(mine))]
					switch id := pick.delivery.ID; {
					case isPending[id] && rng.IntN(2) == 0:
						// An attempt finishes it; a pending delivery
						// is never gone.
						require.True(t, h.tryFinish(t, pick.delivery, webhook.Succeeded), "pending delivery %s vanished", id)
						isPending[id] = false
					case !isPending[id]:
						// A replay makes a finished one pending again,
						// when the pruner has not taken it yet.
						if h.replay(t, acc, id) {
							isPending[id] = true
							replays.Add(1)
						}
					}
				}
				mu.Lock()
				defer mu.Unlock()
				for _, d := range mine {
					if isPending[d.delivery.ID] {
						pending[d.delivery.ID] = d
					} else {
						finished[d.delivery.ID] = d
					}
				}
			}()
		}
		passes := make(chan int, 1)
		go func() {
			n := 0
			defer func() { passes <- n }()
			for !done.Load() {
				pruneAll(t, f, acc, before, 7)
				n++
			}
		}()
		wg.Wait()
		done.Store(true)
		require.Positive(t, <-passes)
		pruneAll(t, f, acc, before, 7)

		require.NotEmpty(t, pending)
		for id, d := range pending {
			got, err := f.Webhooks.Repos().WebhookDelivery(ctx, acc, id)
			require.NoError(t, err, "a pending delivery is never pruned")
			require.Equal(t, webhook.Pending, got.Status)
			require.Equal(t, string(d.event.Payload), string(got.Payload), "nor the event it sends")
		}
		require.NotEmpty(t, finished)
		for id, d := range finished {
			require.False(t, h.deliveryKept(t, acc, id), "a finished old delivery is pruned")
			require.False(t, h.eventKept(t, d.event), "and its event")
		}
		t.Logf("%d pending, %d finished, %d replayed", len(pending), len(finished), replays.Load())
	})
}

// nonZero drops the kinds nothing was deleted of.
func nonZero(m map[retention.Kind]int) map[retention.Kind]int {
	out := map[retention.Kind]int{}
	for k, n := range m {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

// pruneAll prunes every kind of the account's history recorded before
// before, in batches of limit, and counts what it deleted.
func pruneAll(t *testing.T, f RetentionFixture, accountID string, before time.Time, limit int) map[retention.Kind]int {
	t.Helper()
	out := map[retention.Kind]int{}
	for _, kind := range retention.Kinds {
		q := retention.Query{Kind: kind, AccountID: accountID, Before: before, Limit: limit}
		for {
			step, err := f.Store.PruneHistory(context.Background(), q)
			require.NoError(t, err)
			out[kind] += step.Deleted
			if step.Done {
				break
			}
			q.After = step.Next
		}
	}
	return out
}

// history writes an account's history through the stores' own doors.
type history struct {
	f RetentionFixture
	n atomic.Int64
}

func historyOf(t *testing.T, f RetentionFixture) *history { t.Helper(); return &history{f: f} }

// deliveredEvent is an event with its delivery.
type deliveredEvent struct {
	event    event.Event
	delivery webhook.Delivery
}

func (h *history) account(t *testing.T) string {
	t.Helper()
	a := account.Account{ID: ident.New(ident.Account), Name: "Acme", CreatedAt: at, UpdatedAt: at}
	require.NoError(t, h.f.Accounts.Repos().InsertAccount(context.Background(), a))
	return a.ID
}

// event records an event of the account at when.
func (h *history) event(t *testing.T, accountID string, when time.Time) event.Event {
	t.Helper()
	e := newEvent(accountID, "thr_a", event.MessageReceived, int(h.n.Add(1)))
	e.CreatedAt = when
	require.NoError(t, h.f.Webhooks.Decide(context.Background(), func(context.Context, webhooks.TxReads) (writes.Batch, error) {
		return writes.Batch{Events: []event.Event{e}}, nil
	}))
	return e
}

// deliver records a delivery of e at when, in status with attempts
// logged attempts.
func (h *history) deliver(t *testing.T, e event.Event, when time.Time, status webhook.Status, attempts int) webhook.Delivery {
	t.Helper()
	d := newDelivery(e)
	d.CreatedAt, d.UpdatedAt, d.NextAttemptAt = when, when, when
	require.NoError(t, h.f.Webhooks.Decide(context.Background(), func(context.Context, webhooks.TxReads) (writes.Batch, error) {
		return writes.Batch{Deliveries: []webhook.Delivery{d}}, nil
	}))
	h.attempt(t, d, status, attempts)
	d.Status, d.Attempts = status, attempts
	return d
}

// delivered records an event and its delivery at when, as the fan-out
// does, in status with attempts logged attempts.
func (h *history) delivered(t *testing.T, accountID string, when time.Time, status webhook.Status, attempts int) deliveredEvent {
	t.Helper()
	e := newEvent(accountID, "thr_a", event.MessageReceived, int(h.n.Add(1)))
	e.CreatedAt = when
	d := newDelivery(e)
	d.CreatedAt, d.UpdatedAt, d.NextAttemptAt = when, when, when
	require.NoError(t, h.f.Webhooks.Decide(context.Background(), func(context.Context, webhooks.TxReads) (writes.Batch, error) {
		return writes.Batch{Events: []event.Event{e}, Deliveries: []webhook.Delivery{d}}, nil
	}))
	h.attempt(t, d, status, attempts)
	d.Status, d.Attempts = status, attempts
	return deliveredEvent{event: e, delivery: d}
}

// attempt logs attempts attempts of d and leaves it in status.
func (h *history) attempt(t *testing.T, d webhook.Delivery, status webhook.Status, attempts int) {
	t.Helper()
	if attempts == 0 && status == webhook.Pending {
		return
	}
	var b writes.Batch
	for i := range attempts {
		b.Attempts = append(b.Attempts, writes.Attempt{DeliveryID: d.ID, Attempt: webhook.Attempt{At: d.CreatedAt.Add(time.Duration(i) * time.Second), StatusCode: 500}})
	}
	d.Status, d.Attempts = status, attempts
	b.DeliveryStates = []webhook.Delivery{d}
	require.NoError(t, h.f.Webhooks.Decide(context.Background(), func(context.Context, webhooks.TxReads) (writes.Batch, error) { return b, nil }))
}

// finish records a last attempt that leaves d in status.
func (h *history) finish(t *testing.T, d webhook.Delivery, status webhook.Status) {
	t.Helper()
	require.True(t, h.tryFinish(t, d, status))
}

// tryFinish is an attempt's outcome, as the delivery job writes it: it
// reports false when the delivery was pruned meanwhile.
func (h *history) tryFinish(t *testing.T, d webhook.Delivery, status webhook.Status) bool {
	t.Helper()
	d.Status, d.Attempts = status, d.Attempts+1
	err := h.f.Webhooks.Decide(context.Background(), func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
		if _, err := tx.WebhookDelivery(ctx, d.AccountID, d.ID); err != nil {
			return writes.Batch{}, err
		}
		return writes.Batch{
			Attempts:       []writes.Attempt{{DeliveryID: d.ID, Attempt: webhook.Attempt{At: d.CreatedAt, StatusCode: 200}}},
			DeliveryStates: []webhook.Delivery{d},
		}, nil
	})
	if failure.Is(err, failure.KindNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// replay makes the delivery id pending again as webhooks.Service.Replay
// does, and reports false when it was pruned first.
func (h *history) replay(t *testing.T, accountID, id string) bool {
	t.Helper()
	err := h.f.Webhooks.Decide(context.Background(), func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error) {
		d, err := tx.WebhookDelivery(ctx, accountID, id)
		if err != nil {
			return writes.Batch{}, err
		}
		d.Status, d.Attempts, d.Payload = webhook.Pending, 0, nil
		return writes.Batch{DeliveryStates: []webhook.Delivery{d}}, nil
	})
	if failure.Is(err, failure.KindNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

func (h *history) eventKept(t *testing.T, e event.Event) bool {
	t.Helper()
	return h.f.Count(t, "SELECT COUNT(*) FROM events WHERE id = ?", e.ID) == 1
}

func (h *history) deliveryKept(t *testing.T, accountID, id string) bool {
	t.Helper()
	return h.f.Count(t, "SELECT COUNT(*) FROM webhook_deliveries WHERE id = ? AND account_id = ?", id, accountID) == 1
}

func (h *history) attempts(t *testing.T, d webhook.Delivery) int {
	t.Helper()
	return h.f.Count(t, "SELECT COUNT(*) FROM webhook_attempts WHERE delivery_id = ?", d.ID)
}

func (h *history) cronJob(t *testing.T, accountID string) cron.Job {
	t.Helper()
	j := newCronJob(accountID, at)
	require.NoError(t, insertJob(context.Background(), h.f.Cron, j))
	return j
}

// execution records a run of job that started at when, in status.
func (h *history) execution(t *testing.T, job cron.Job, when time.Time, status cron.ExecutionStatus) cron.Execution {
	t.Helper()
	e := cronExec(job.ID, job.AccountID, when)
	e.Status = status
	stored, err := insertExecutions(context.Background(), h.f.Cron, []cron.Execution{e})
	require.NoError(t, err)
	require.Equal(t, []string{e.ID}, stored)
	return e
}

func (h *history) executionKept(t *testing.T, job cron.Job, e cron.Execution) bool {
	t.Helper()
	return h.f.Count(t, "SELECT COUNT(*) FROM cron_executions WHERE id = ? AND job_id = ?", e.ID, job.ID) == 1
}

// keep has the sandbox mailbox keep an email of the account dated when.
func (h *history) keep(t *testing.T, accountID string, when time.Time, subject string) {
	t.Helper()
	require.NoError(t, h.f.Mailbox.Keep(context.Background(), appemail.KeptEmail{
		AccountID: accountID, MessageID: "<" + ident.New(ident.Email) + "@example.com>", From: "bot@mail.example.com",
		To: "ann@example.org", Subject: subject, Text: "Hello", Date: when,
	}, appemail.DefaultMailboxLimits))
}
