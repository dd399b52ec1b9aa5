package memory

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

var (
	_ webhooks.Repos = (*Repos)(nil)
)

// loggedEvent is an event with its position in the log.
type loggedEvent struct {
	seq int64
	event.Event
}

// attemptRow is one attempt of a delivery, in the log's order (seq).
type attemptRow struct {
	seq        int64
	deliveryID string
	webhook.Attempt
}

// WebhookEndpoint reads an account's endpoint; NotFound when it has none.
func (r *Repos) WebhookEndpoint(ctx context.Context, accountID string) (webhooks.Record, error) {
	var out webhooks.Record
	err := r.read(ctx, func(t *tables) error {
		rec, ok := t.endpoints[accountID]
		if !ok {
			return failure.NotFound("webhook")
		}
		out = cloneRecord(rec)
		return nil
	})
	return out, err
}

// WebhookEndpoints reads the endpoints of the accounts ids that have one.
func (r *Repos) WebhookEndpoints(ctx context.Context, accountIDs []string) ([]webhooks.Record, error) {
	var out []webhooks.Record
	err := r.read(ctx, func(t *tables) error {
		out = make([]webhooks.Record, 0, len(accountIDs))
		for _, id := range unique(accountIDs) {
			if rec, ok := t.endpoints[id]; ok {
				out = append(out, cloneRecord(rec))
			}
		}
		return nil
	})
	return out, err
}

// ChangeWebhookEndpoint reads an account's endpoint and saves what change
// makes of it, in one transaction.
func (r *Repos) ChangeWebhookEndpoint(ctx context.Context, accountID string, change func(webhooks.Record, bool) (webhooks.Record, error)) (webhooks.Record, error) {
	var saved webhooks.Record
	err := r.db.Transact(ctx, func(ctx context.Context, tx *Repos) error {
		current, err := tx.WebhookEndpoint(ctx, accountID)
		found := err == nil
		if err != nil && !failure.Is(err, failure.KindNotFound) {
			return err
		}
		if saved, err = change(current, found); err != nil {
			return err
		}
		return tx.SaveWebhookEndpoint(ctx, saved)
	})
	if err != nil {
		return webhooks.Record{}, err
	}
	return saved, nil
}

// SaveWebhookEndpoint inserts or replaces an account's endpoint; a
// replaced one keeps its creation time.
func (r *Repos) SaveWebhookEndpoint(ctx context.Context, rec webhooks.Record) error {
	return r.write(ctx, func(t *tables) error {
		id := rec.Endpoint.AccountID
		if err := t.needAccount(id); err != nil {
			return err
		}
		rec = cloneRecord(rec)
		if cur, ok := t.endpoints[id]; ok {
			rec.Endpoint.CreatedAt = cur.Endpoint.CreatedAt
		}
		t.endpoints[id] = rec
		return nil
	})
}

func (t *tables) insertDelivery(d webhook.Delivery) error {
	if _, ok := t.deliveries[d.ID]; ok {
		return taken("delivery")
	}
	if err := t.needAccount(d.AccountID); err != nil {
		return err
	}
	t.lastDelivery++
	d = cloneDelivery(d)
	d.Seq, d.LastStatusCode, d.LastError = t.lastDelivery, 0, ""
	t.deliveries[d.ID] = d
	return nil
}

// eventByID finds an event by its id.
func (t *tables) eventByID(id string) (loggedEvent, bool) {
	e, ok := t.events[id]
	return e, ok
}

// withPayload is a delivery as read: with its event's payload; false when
// the event is gone (SQL's inner join leaves the delivery out).
func (t *tables) withPayload(d webhook.Delivery) (webhook.Delivery, bool) {
	e, ok := t.eventByID(d.EventID)
	if !ok {
		return webhook.Delivery{}, false
	}
	d.Payload = text(e.Payload)
	return d, true
}

// WebhookDelivery reads a delivery with its event's payload; an empty
// accountID reads it whatever its account.
func (r *Repos) WebhookDelivery(ctx context.Context, accountID, id string) (webhook.Delivery, error) {
	var out webhook.Delivery
	err := r.read(ctx, func(t *tables) error {
		d, ok := t.deliveries[id]
		if ok && (accountID == "" || d.AccountID == accountID) {
			if out, ok = t.withPayload(d); ok {
				return nil
			}
		}
		return failure.NotFound("delivery")
	})
	return out, err
}

// DeliveriesToSend reads deliveries, each with its payload, its endpoint
// and whether an earlier delivery of its thread is still untried; ids that
// do not exist are left out.
func (r *Repos) DeliveriesToSend(ctx context.Context, ids []string) ([]webhooks.Sendable, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []webhooks.Sendable
	err := r.read(ctx, func(t *tables) error {
		out = make([]webhooks.Sendable, 0, len(ids))
		for _, id := range unique(ids) {
			d, ok := t.deliveries[id]
			if !ok {
				continue
			}
			if d, ok = t.withPayload(d); !ok {
				continue
			}
			s := webhooks.Sendable{Delivery: d}
			if rec, found := t.endpoints[d.AccountID]; found {
				s.Endpoint, s.Found = cloneRecord(rec), true
			}
			for _, p := range t.deliveries {
				if p.AccountID == d.AccountID && p.ThreadID == d.ThreadID && p.Seq < d.Seq && p.Status == webhook.Pending && p.Attempts == 0 {
					s.EarlierUntried = true
					break
				}
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// UpdateWebhookDelivery saves a delivery's progress.
func (r *Repos) UpdateWebhookDelivery(ctx context.Context, d webhook.Delivery) error {
	return r.write(ctx, func(t *tables) error {
		if !t.updateDelivery(d) {
			return failure.NotFound("delivery")
		}
		return nil
	})
}

// updateDelivery saves d's progress; false when d does not exist.
func (t *tables) updateDelivery(d webhook.Delivery) bool {
	cur, ok := t.deliveries[d.ID]
	if !ok {
		return false
	}
	cur.Status, cur.Attempts, cur.LastStatusCode, cur.LastError = d.Status, d.Attempts, d.LastStatusCode, d.LastError
	cur.NextAttemptAt, cur.UpdatedAt = utc(d.NextAttemptAt), utc(d.UpdatedAt)
	t.deliveries[d.ID] = cur
	return true
}

func (t *tables) insertAttempt(deliveryID string, a webhook.Attempt) error {
	if _, ok := t.deliveries[deliveryID]; !ok {
		return foreignKey("webhook delivery", deliveryID)
	}
	// The latency is kept in microseconds.
	a.At, a.Latency = utc(a.At), a.Latency.Truncate(time.Microsecond)
	t.lastAttempt++
	t.attempts[t.lastAttempt] = attemptRow{seq: t.lastAttempt, deliveryID: deliveryID, Attempt: a}
	return nil
}

// RecordWebhookAttempts logs attempts and saves their deliveries together,
// skipping deliveries that do not exist.
func (r *Repos) RecordWebhookAttempts(ctx context.Context, attempts []webhooks.LoggedAttempt, ds []webhook.Delivery) error {
	return r.write(ctx, func(t *tables) error {
		for _, a := range attempts {
			if err := t.insertAttempt(a.DeliveryID, a.Attempt); err != nil {
				return err
			}
		}
		for _, d := range ds {
			t.updateDelivery(d)
		}
		return nil
	})
}

// WebhookDeliveries lists deliveries newest first with their attempts, and
// the number matching.
func (r *Repos) WebhookDeliveries(ctx context.Context, q webhooks.DeliveryQuery) ([]webhook.Delivery, int, error) {
	var (
		out   []webhook.Delivery
		total int
	)
	err := r.read(ctx, func(t *tables) error {
		rows := sorted(t.deliveries, func(d webhook.Delivery) bool {
			return d.AccountID == q.AccountID && (q.Status == "" || d.Status == q.Status) && (q.EventType == "" || d.EventType == q.EventType)
		}, func(a, b webhook.Delivery) int { return cmp.Compare(b.Seq, a.Seq) })
		total = len(rows)
		out = make([]webhook.Delivery, 0)
		for _, d := range rows {
			if d, ok := t.withPayload(d); ok {
				out = append(out, d)
			}
		}
		out = window(out, q.Offset, q.Limit)
		logs := sorted(t.attempts, func(attemptRow) bool { return true }, func(a, b attemptRow) int { return cmp.Compare(a.seq, b.seq) })
		for i := range out {
			for _, a := range logs {
				if a.deliveryID == out[i].ID {
					out[i].Log = append(out[i].Log, a.Attempt)
				}
			}
		}
		return nil
	})
	return out, total, err
}

// InsertEvent appends to the account's event log.
func (r *Repos) InsertEvent(ctx context.Context, e event.Event) error {
	return r.write(ctx, func(t *tables) error { return t.insertEvent(e) })
}

func (t *tables) insertEvent(e event.Event) error {
	if _, ok := t.events[e.ID]; ok {
		return taken("event")
	}
	if err := t.needAccount(e.AccountID); err != nil {
		return err
	}
	t.lastEvent++
	t.events[e.ID] = loggedEvent{seq: t.lastEvent, Event: cloneEvent(e)}
	return nil
}

// eventLog is the log in seq order.
func (t *tables) eventLog() []loggedEvent {
	return sorted(t.events, func(loggedEvent) bool { return true }, func(a, b loggedEvent) int { return cmp.Compare(a.seq, b.seq) })
}

// EventsAfter reads an account's events after afterID, oldest first.
func (r *Repos) EventsAfter(ctx context.Context, accountID, afterID string, limit int) ([]event.Event, error) {
	var out []event.Event
	err := r.read(ctx, func(t *tables) error {
		var after int64
		if afterID != "" {
			e, ok := t.eventByID(afterID)
			if !ok || e.AccountID != accountID {
				return failure.NotFound("event")
			}
			after = e.seq
		}
		out = make([]event.Event, 0)
		for _, e := range t.eventLog() {
			if e.AccountID == accountID && e.seq > after {
				out = append(out, cloneEvent(e.Event))
			}
		}
		out = window(out, 0, limit)
		return nil
	})
	return out, err
}

// EnqueueJob adds a job; with a unique key held by another job it adds
// nothing and returns that job's id. This database does not learn when a
// job finishes, so a unique key stays taken.
func (r *Repos) EnqueueJob(ctx context.Context, p jobs.EnqueueParams) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var id int64
	err := r.write(ctx, func(t *tables) error {
		if p.UniqueKey != "" {
			for _, j := range t.jobs {
				if j.UniqueKey == p.UniqueKey {
					id = j.ID
					return nil
				}
			}
		}
		id = t.enqueue(p, r.db.now())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", p.Kind, err)
	}
	return id, nil
}

// enqueue adds a job, due at p.RunAt or now, and returns its id.
func (t *tables) enqueue(p jobs.EnqueueParams, now time.Time) int64 {
	runAt := p.RunAt
	if runAt.IsZero() {
		runAt = now
	}
	t.lastJob++
	t.jobs[t.lastJob] = jobs.Job{
		ID: t.lastJob, Kind: p.Kind, Payload: text(p.Payload), MaxAttempts: cmp.Or(p.MaxAttempts, jobs.DefaultMaxAttempts),
		UniqueKey: p.UniqueKey, PaceKey: p.PaceKey, AccountID: p.AccountID, EndpointKey: p.EndpointKey,
		RunAt: utc(runAt), CreatedAt: utc(now),
	}
	return t.lastJob
}

// WebhookStore is the webhook use cases' store (webhooks.Store), as store.DB.WebhookStore is.
func (db *DB) WebhookStore() webhooks.Store {
	return decidingStore[webhooks.Repos, webhooks.TxReads]{
		bound: bound[webhooks.Repos]{db: db, view: func(r *Repos) webhooks.Repos { return r }},
		reads: func(r *Repos) webhooks.TxReads { return r },
	}
}
