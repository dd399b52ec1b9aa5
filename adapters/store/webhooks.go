package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// WebhookStore is the storage of webhook endpoints, the event log and deliveries (webhooks.Store).
type WebhookStore struct{ *Conn }

var _ webhooks.Store = WebhookStore{}

// WebhookStore is db's WebhookStore, outside any transaction.
func (db *DB) WebhookStore() WebhookStore { return WebhookStore{db.base} }

// Repos is s itself: its methods run each as its own statement outside a
// transaction, and inside the one Decide runs.
func (s WebhookStore) Repos() webhooks.Repos { return s }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there, with its reactions (webhooks.Store).
func (s WebhookStore) Decide(ctx context.Context, decide func(ctx context.Context, tx webhooks.TxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) { return decide(ctx, WebhookStore{c}) })
}

type webhookEndpointRow struct {
	bun.BaseModel  `bun:"table:webhook_endpoints"`
	AccountID      string     `bun:"account_id,pk"`
	URL            string     `bun:"url"`
	Enabled        bool       `bun:"enabled"`
	Events         string     `bun:"events"`
	SealedSecret   []byte     `bun:"sealed_secret"`
	SealedPrevious []byte     `bun:"sealed_previous"`
	PreviousUntil  *time.Time `bun:"previous_until"`
	DisabledReason string     `bun:"disabled_reason"`
	DisabledAt     *time.Time `bun:"disabled_at"`
	FailingSince   *time.Time `bun:"failing_since"`
	InlineMedia    int64      `bun:"inline_media_max_bytes"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
}

const webhookEndpointColumns = "account_id, url, enabled, events, sealed_secret, sealed_previous, previous_until, disabled_reason, disabled_at, failing_since, inline_media_max_bytes, created_at, updated_at"

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (r webhookEndpointRow) record() webhooks.Record {
	e := webhook.Endpoint{
		AccountID: r.AccountID, URL: r.URL, Enabled: r.Enabled, DisabledReason: r.DisabledReason,
		DisabledAt: utcPtr(r.DisabledAt), FailingSince: utcPtr(r.FailingSince), InlineMediaMaxBytes: r.InlineMedia,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.Events != "" {
		for _, t := range strings.Split(r.Events, ",") {
			e.Events = append(e.Events, event.Type(t))
		}
	}
	if r.PreviousUntil != nil {
		e.PreviousUntil = r.PreviousUntil.UTC()
	}
	return webhooks.Record{Endpoint: e, SealedSecret: r.SealedSecret, SealedPrevious: r.SealedPrevious}
}

// WebhookEndpoint reads an account's endpoint; NotFound when it has none.
func (r WebhookStore) WebhookEndpoint(ctx context.Context, accountID string) (webhooks.Record, error) {
	var row webhookEndpointRow
	if err := r.selectOne(ctx, &row, "SELECT "+webhookEndpointColumns+" FROM webhook_endpoints WHERE account_id = $1"+r.lockForUpdate(), accountID); err != nil {
		return webhooks.Record{}, translate(err, "webhook")
	}
	return row.record(), nil
}

// ChangeWebhookEndpoint reads an account's endpoint locked, and saves what
// change makes of it, in one transaction.
func (r WebhookStore) ChangeWebhookEndpoint(ctx context.Context, accountID string, change func(webhooks.Record, bool) (webhooks.Record, error)) (webhooks.Record, error) {
	var saved webhooks.Record
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		tx := WebhookStore{c}
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

// SaveWebhookEndpoint inserts or replaces an account's endpoint.
func (r WebhookStore) SaveWebhookEndpoint(ctx context.Context, rec webhooks.Record) error {
	e := rec.Endpoint
	types := make([]string, len(e.Events))
	for i, t := range e.Events {
		types[i] = string(t)
	}
	row := webhookEndpointRow{
		AccountID: e.AccountID, URL: e.URL, Enabled: e.Enabled, Events: strings.Join(types, ","),
		SealedSecret: rec.SealedSecret, SealedPrevious: rec.SealedPrevious, DisabledReason: e.DisabledReason,
		DisabledAt: e.DisabledAt, FailingSince: e.FailingSince, InlineMedia: e.InlineMediaMaxBytes, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}
	if !e.PreviousUntil.IsZero() {
		row.PreviousUntil = &e.PreviousUntil
	}
	_, err := r.write.NewInsert().Model(&row).
		On("CONFLICT (account_id) DO UPDATE").
		Set("url = EXCLUDED.url, enabled = EXCLUDED.enabled, events = EXCLUDED.events").
		Set("sealed_secret = EXCLUDED.sealed_secret, sealed_previous = EXCLUDED.sealed_previous, previous_until = EXCLUDED.previous_until").
		Set("disabled_reason = EXCLUDED.disabled_reason, disabled_at = EXCLUDED.disabled_at, failing_since = EXCLUDED.failing_since").
		Set("inline_media_max_bytes = EXCLUDED.inline_media_max_bytes, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return translate(err, "webhook")
}

type webhookDeliveryRow struct {
	bun.BaseModel  `bun:"table:webhook_deliveries"`
	Seq            int64     `bun:"seq,pk,autoincrement"`
	ID             string    `bun:"id"`
	AccountID      string    `bun:"account_id"`
	EventID        string    `bun:"event_id"`
	EventType      string    `bun:"event_type"`
	ThreadID       string    `bun:"thread_id"`
	Status         string    `bun:"status"`
	Attempts       int       `bun:"attempts"`
	LastStatusCode int       `bun:"last_status_code"`
	LastError      string    `bun:"last_error"`
	NextAttemptAt  time.Time `bun:"next_attempt_at"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
	Payload        string    `bun:"payload,scanonly"`
}

const webhookDeliveryColumns = "d.seq, d.id, d.account_id, d.event_id, d.event_type, d.thread_id, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at, d.created_at, d.updated_at, e.payload"

func (r webhookDeliveryRow) domain() webhook.Delivery {
	return webhook.Delivery{
		Seq: r.Seq, ID: r.ID, AccountID: r.AccountID, EventID: r.EventID, EventType: event.Type(r.EventType), ThreadID: r.ThreadID,
		Status: webhook.Status(r.Status), Attempts: r.Attempts, LastStatusCode: r.LastStatusCode, LastError: r.LastError,
		NextAttemptAt: r.NextAttemptAt.UTC(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Payload: []byte(r.Payload),
	}
}

// newDeliveryRow is a delivery as inserted (its seq is the table's).
type newDeliveryRow struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`
	ID            string    `bun:"id"`
	AccountID     string    `bun:"account_id"`
	EventID       string    `bun:"event_id"`
	EventType     string    `bun:"event_type"`
	ThreadID      string    `bun:"thread_id"`
	Status        string    `bun:"status"`
	Attempts      int       `bun:"attempts"`
	NextAttemptAt time.Time `bun:"next_attempt_at"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func deliveryToRow(d webhook.Delivery) newDeliveryRow {
	return newDeliveryRow{
		ID: d.ID, AccountID: d.AccountID, EventID: d.EventID, EventType: string(d.EventType), ThreadID: d.ThreadID,
		Status: string(d.Status), Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// WebhookDelivery reads a delivery with its event's payload; an empty
// accountID reads it whatever its account. Inside a Postgres transaction
// the delivery stays locked until it ends.
func (r WebhookStore) WebhookDelivery(ctx context.Context, accountID, id string) (webhook.Delivery, error) {
	var row webhookDeliveryRow
	q := "SELECT " + webhookDeliveryColumns + " FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1"
	args := []any{id}
	if accountID != "" {
		q += " AND d.account_id = $2"
		args = append(args, accountID)
	}
	if r.lockForUpdate() != "" {
		// A decision about the delivery (a replay) holds it until it
		// ends, so that the pruner cannot delete it meanwhile: its
		// delete waits and then finds the delivery pending again.
		q += " FOR UPDATE OF d"
	}
	if err := r.selectOne(ctx, &row, q, args...); err != nil {
		return webhook.Delivery{}, translate(err, "delivery")
	}
	return row.domain(), nil
}

// UpdateWebhookDelivery saves a delivery's progress.
func (r WebhookStore) UpdateWebhookDelivery(ctx context.Context, d webhook.Delivery) error {
	res, err := r.write.NewUpdate().Model((*webhookDeliveryRow)(nil)).
		Set("status = ?", string(d.Status)).Set("attempts = ?", d.Attempts).
		Set("last_status_code = ?", d.LastStatusCode).Set("last_error = ?", d.LastError).
		Set("next_attempt_at = ?", d.NextAttemptAt).Set("updated_at = ?", d.UpdatedAt).
		Where("id = ?", d.ID).Exec(ctx)
	if err != nil {
		return translate(err, "delivery")
	}
	return requireOneRow(res, "delivery")
}

// newAttemptRow is an attempt as inserted (its seq is the table's).
type newAttemptRow struct {
	bun.BaseModel `bun:"table:webhook_attempts"`
	DeliveryID    string    `bun:"delivery_id"`
	AttemptedAt   time.Time `bun:"attempted_at"`
	StatusCode    int       `bun:"status_code"`
	LatencyUS     int64     `bun:"latency_us"`
	Error         string    `bun:"error"`
	Response      string    `bun:"response"`
	Interrupted   bool      `bun:"interrupted"`
}

func attemptToRow(a writes.Attempt) newAttemptRow {
	return newAttemptRow{
		DeliveryID: a.DeliveryID, AttemptedAt: a.Attempt.At, StatusCode: a.Attempt.StatusCode, LatencyUS: a.Attempt.Latency.Microseconds(),
		Error: a.Attempt.Error, Response: a.Attempt.Response, Interrupted: a.Attempt.Interrupted,
	}
}

// webhookAttemptRow is an attempt as read, with its seq.
type webhookAttemptRow struct {
	bun.BaseModel `bun:"table:webhook_attempts"`
	Seq           int64 `bun:"seq,pk,autoincrement"`
	newAttemptRow
}

// WebhookDeliveries lists deliveries newest first with their attempts.
func (r WebhookStore) WebhookDeliveries(ctx context.Context, q webhooks.DeliveryQuery) ([]webhook.Delivery, int, error) {
	where, args := " WHERE d.account_id = $1", []any{q.AccountID}
	if q.Status != "" {
		args = append(args, string(q.Status))
		where += " AND d.status = $" + strconv.Itoa(len(args))
	}
	if q.EventType != "" {
		args = append(args, string(q.EventType))
		where += " AND d.event_type = $" + strconv.Itoa(len(args))
	}
	var count []struct {
		N int `bun:"n"`
	}
	if err := r.selectAll(ctx, &count, "SELECT COUNT(*) AS n FROM webhook_deliveries d"+where, args...); err != nil {
		return nil, 0, translate(err, "delivery")
	}
	var rows []webhookDeliveryRow
	page := append(append([]any{}, args...), q.Limit, q.Offset)
	query := "SELECT " + webhookDeliveryColumns + " FROM webhook_deliveries d JOIN events e ON e.id = d.event_id" + where +
		" ORDER BY d.seq DESC LIMIT $" + strconv.Itoa(len(page)-1) + " OFFSET $" + strconv.Itoa(len(page))
	if err := r.selectAll(ctx, &rows, query, page...); err != nil {
		return nil, 0, translate(err, "delivery")
	}
	out := make([]webhook.Delivery, len(rows))
	index := map[string]int{}
	ids := make([]string, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
		index[row.ID] = i
		ids[i] = row.ID
	}
	if len(ids) > 0 {
		var attempts []webhookAttemptRow
		if err := r.read.NewSelect().Model(&attempts).Where("delivery_id IN (?)", bun.List(ids)).Order("seq").Scan(ctx); err != nil {
			return nil, 0, translate(err, "attempt")
		}
		for _, a := range attempts {
			i := index[a.DeliveryID]
			out[i].Log = append(out[i].Log, webhook.Attempt{
				At: a.AttemptedAt.UTC(), StatusCode: a.StatusCode, Latency: time.Duration(a.LatencyUS) * time.Microsecond, Error: a.Error, Response: a.Response,
				Interrupted: a.Interrupted,
			})
		}
	}
	n := 0
	if len(count) > 0 {
		n = count[0].N
	}
	return out, n, nil
}

// EventsAfter reads an account's events after afterID, oldest first.
func (r WebhookStore) EventsAfter(ctx context.Context, accountID, afterID string, limit int) ([]event.Event, error) {
	var after int64
	if afterID != "" {
		var cursor []struct {
			Seq int64 `bun:"seq"`
		}
		if err := r.selectAll(ctx, &cursor, "SELECT seq FROM events WHERE id = $1 AND account_id = $2", afterID, accountID); err != nil {
			return nil, translate(err, "event")
		}
		if len(cursor) == 0 {
			return nil, translate(sql.ErrNoRows, "event")
		}
		after = cursor[0].Seq
	}
	var rows []eventRow
	if err := r.selectAll(ctx, &rows, "SELECT id, account_id, type, thread_id, payload, created_at FROM events WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", accountID, after, limit); err != nil {
		return nil, translate(err, "event")
	}
	out := make([]event.Event, len(rows))
	for i, row := range rows {
		out[i] = event.Event{ID: row.ID, AccountID: row.AccountID, Type: event.Type(row.Type), ThreadID: row.ThreadID.String, Payload: []byte(row.Payload), CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}

type sendableRow struct {
	webhookDeliveryRow
	EndpointAccount sql.NullString `bun:"w_account_id"`
	URL             sql.NullString `bun:"w_url"`
	Enabled         sql.NullBool   `bun:"w_enabled"`
	Events          sql.NullString `bun:"w_events"`
	SealedSecret    []byte         `bun:"w_sealed_secret"`
	SealedPrevious  []byte         `bun:"w_sealed_previous"`
	PreviousUntil   *time.Time     `bun:"w_previous_until"`
	DisabledReason  sql.NullString `bun:"w_disabled_reason"`
	DisabledAt      *time.Time     `bun:"w_disabled_at"`
	FailingSince    *time.Time     `bun:"w_failing_since"`
	InlineMedia     sql.NullInt64  `bun:"w_inline_media_max_bytes"`
	WCreatedAt      *time.Time     `bun:"w_created_at"`
	WUpdatedAt      *time.Time     `bun:"w_updated_at"`
	Earlier         bool           `bun:"earlier"`
}

// DeliveriesToSend reads deliveries, each with its payload, its endpoint
// and whether an earlier delivery of its thread is still untried, in one
// query; ids that do not exist are left out.
func (r WebhookStore) DeliveriesToSend(ctx context.Context, ids []string) ([]webhooks.Sendable, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []sendableRow
	if err := r.selectByIDs(ctx, &rows, deliveriesToSendQuery, ids); err != nil {
		return nil, translate(err, "delivery")
	}
	out := make([]webhooks.Sendable, len(rows))
	for i, row := range rows {
		out[i] = row.sendable()
	}
	return out, nil
}

// deliveriesToSendQuery reads deliveries with their payload, their
// account's endpoint (w_ columns) and whether an earlier delivery of their
// thread is still untried.
var deliveriesToSendQuery = newByIDs("SELECT " + webhookDeliveryColumns + ", " + columnsOf(webhookEndpointColumns, "w", "w_") + `,
	EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.account_id = d.account_id AND p.thread_id = d.thread_id
		AND p.seq < d.seq AND p.status = 'pending' AND p.attempts = 0) AS earlier
	FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
	LEFT JOIN webhook_endpoints w ON w.account_id = d.account_id
	WHERE d.id IN (?)`)

func (row sendableRow) sendable() webhooks.Sendable {
	out := webhooks.Sendable{Delivery: row.webhookDeliveryRow.domain(), EarlierUntried: row.Earlier, Found: row.EndpointAccount.Valid}
	if out.Found {
		ep := webhookEndpointRow{
			AccountID: row.EndpointAccount.String, URL: row.URL.String, Enabled: row.Enabled.Bool, Events: row.Events.String,
			SealedSecret: row.SealedSecret, SealedPrevious: row.SealedPrevious, PreviousUntil: row.PreviousUntil,
			DisabledReason: row.DisabledReason.String, DisabledAt: row.DisabledAt, FailingSince: row.FailingSince,
			InlineMedia: row.InlineMedia.Int64,
		}
		if row.WCreatedAt != nil {
			ep.CreatedAt = *row.WCreatedAt
		}
		if row.WUpdatedAt != nil {
			ep.UpdatedAt = *row.WUpdatedAt
		}
		out.Endpoint = ep.record()
	}
	return out
}

// insertWebhookAttempts appends many attempts in one statement.
func (r WebhookStore) insertWebhookAttempts(ctx context.Context, attempts []webhooks.LoggedAttempt) error {
	if len(attempts) == 0 {
		return nil
	}
	_, err := r.write.NewInsert().Model(attemptRows(attempts)).Exec(ctx)
	return translate(err, "attempt")
}

// RecordWebhookAttempts logs attempts and saves their deliveries together.
// On Postgres outside a transaction the two statements go as one query,
// which Postgres runs as one transaction: one round trip instead of four
// (BEGIN, INSERT, UPDATE, COMMIT).
func (r WebhookStore) RecordWebhookAttempts(ctx context.Context, attempts []webhooks.LoggedAttempt, ds []webhook.Delivery) error {
	if r.dialect != Postgres || r.tx != nil || len(attempts) == 0 || len(ds) == 0 {
		if r.tx != nil {
			return r.recordWebhookAttempts(ctx, attempts, ds)
		}
		return r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
			return WebhookStore{c}.recordWebhookAttempts(ctx, attempts, ds)
		})
	}
	// One statement: the attempts of the deliveries the update found (a
	// delivery erased while its attempt was under way logs nothing).
	n := len(attempts)
	ids, at, codes, latency, errs, responses := make([]string, n), make([]time.Time, n), make([]int64, n), make([]int64, n), make([]string, n), make([]string, n)
	for i, a := range attempts {
		row := attemptToRow(writes.Attempt(a))
		ids[i], at[i], codes[i], latency[i], errs[i], responses[i] = row.DeliveryID, row.AttemptedAt, int64(row.StatusCode), row.LatencyUS, row.Error, row.Response
	}
	q := r.updateDeliveriesQuery(ds, "WITH updated AS (", ` RETURNING d.id)
		INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_us, error, response)
		SELECT a.delivery_id, a.attempted_at, a.status_code, a.latency_us, a.error, a.response
		FROM unnest(?::text[], ?::timestamptz[], ?::int[], ?::bigint[], ?::text[], ?::text[])
			AS a(delivery_id, attempted_at, status_code, latency_us, error, response)
		WHERE a.delivery_id IN (SELECT id FROM updated)`, pgdialect.Array(ids), pgdialect.Array(at), pgdialect.Array(codes), pgdialect.Array(latency),
		pgdialect.Array(errs), pgdialect.Array(responses))
	_, err := q.Exec(ctx)
	return translate(err, "delivery")
}

// recordWebhookAttempts saves the deliveries, then logs the attempts of
// those that are still there.
func (r WebhookStore) recordWebhookAttempts(ctx context.Context, attempts []webhooks.LoggedAttempt, ds []webhook.Delivery) error {
	found, err := r.updateWebhookDeliveries(ctx, ds)
	if err != nil {
		return err
	}
	kept := attempts[:0:0]
	for _, a := range attempts {
		if found[a.DeliveryID] {
			kept = append(kept, a)
		}
	}
	return r.insertWebhookAttempts(ctx, kept)
}

func attemptRows(attempts []webhooks.LoggedAttempt) *[]newAttemptRow {
	rows := make([]newAttemptRow, len(attempts))
	for i, a := range attempts {
		rows[i] = attemptToRow(writes.Attempt(a))
	}
	return &rows
}

// updateWebhookDeliveries saves many deliveries: one statement on Postgres,
// one per delivery on SQLite (in process, where a statement costs little).
// It returns the ids of the deliveries it found.
func (r WebhookStore) updateWebhookDeliveries(ctx context.Context, ds []webhook.Delivery) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ds) == 0 {
		return found, nil
	}
	if r.dialect != Postgres {
		for _, d := range ds {
			err := r.UpdateWebhookDelivery(ctx, d)
			switch {
			case err == nil:
				found[d.ID] = true
			case !failure.Is(err, failure.KindNotFound):
				return nil, err
			}
		}
		return found, nil
	}
	var ids []string
	if err := r.updateDeliveriesQuery(ds, "", " RETURNING d.id").Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, translate(err, "delivery")
	}
	for _, id := range ids {
		found[id] = true
	}
	return found, nil
}

// updateDeliveriesQuery is updateWebhookDeliveries's statement on
// Postgres, between prefix and suffix (with args after its own).
func (r WebhookStore) updateDeliveriesQuery(ds []webhook.Delivery, prefix, suffix string, args ...any) *bun.RawQuery {
	n := len(ds)
	ids, statuses, errs := make([]string, n), make([]string, n), make([]string, n)
	attempts, codes := make([]int64, n), make([]int64, n)
	next, updated := make([]time.Time, n), make([]time.Time, n)
	for i, d := range ds {
		ids[i], statuses[i], errs[i] = d.ID, string(d.Status), d.LastError
		attempts[i], codes[i] = int64(d.Attempts), int64(d.LastStatusCode)
		next[i], updated[i] = d.NextAttemptAt, d.UpdatedAt
	}
	return r.write.NewRaw(prefix+`UPDATE webhook_deliveries AS d SET status = u.status, attempts = u.attempts,
		last_status_code = u.code, last_error = u.err, next_attempt_at = u.next, updated_at = u.updated
		FROM unnest(?::text[], ?::text[], ?::int[], ?::int[], ?::text[], ?::timestamptz[], ?::timestamptz[])
			AS u(id, status, attempts, code, err, next, updated)
		WHERE d.id = u.id`+suffix,
		append([]any{pgdialect.Array(ids), pgdialect.Array(statuses), pgdialect.Array(attempts), pgdialect.Array(codes),
			pgdialect.Array(errs), pgdialect.Array(next), pgdialect.Array(updated)}, args...)...)
}

// WebhookEndpoints reads the endpoints of the accounts ids that have one.
func (r WebhookStore) WebhookEndpoints(ctx context.Context, ids []string) ([]webhooks.Record, error) {
	var rows []webhookEndpointRow
	if err := r.selectByIDs(ctx, &rows, webhookEndpointsQuery, ids); err != nil {
		return nil, translate(err, "webhook")
	}
	out := make([]webhooks.Record, len(rows))
	for i, row := range rows {
		out[i] = row.record()
	}
	return out, nil
}

// webhookEndpointsQuery reads the endpoints of a set of accounts
// (WebhookEndpoints): every shared commit that records events asks it.
var webhookEndpointsQuery = newByIDs("SELECT " + webhookEndpointColumns + " FROM webhook_endpoints WHERE account_id IN (?)")

// InsertEvent appends to the account's event log.
func (r WebhookStore) InsertEvent(ctx context.Context, e event.Event) error {
	row := eventToRow(e)
	if _, err := r.write.NewInsert().Model(&row).Returning("NULL").Exec(ctx); err != nil {
		return translate(err, "event")
	}
	r.eventAppended()
	return nil
}

// Message reads a message of the account, for a replay's check
// (MessagingStore.Message).
func (r WebhookStore) Message(ctx context.Context, accountID, id string) (messaging.Message, error) {
	return MessagingStore(r).Message(ctx, accountID, id)
}

// EnqueueJob enqueues on the job queue, in s's transaction when it has one
// (JobQueue.EnqueueJob).
func (r WebhookStore) EnqueueJob(ctx context.Context, p jobs.EnqueueParams) (int64, error) {
	return JobQueue(r).EnqueueJob(ctx, p)
}
