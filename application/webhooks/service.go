// Package webhooks holds the customer webhook use cases: the endpoint
// setting of an account (URL, enabled flag, event types, a signing secret
// shown once and stored sealed), turning each recorded event into a
// delivery inside the transaction that records it, the delivery job
// (signed POST, retried on a fixed schedule, logged attempt by attempt),
// replay, and the polling and acknowledgement routes for agents without a
// public URL.
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// DeliverKind is the job kind that makes the attempts of one delivery.
const DeliverKind = "webhook.deliver"

// jobAttempts bounds the runs of one delivery job. The delivery counts its
// own attempts (webhook.Schedule); job runs also include the short waits
// that keep a thread's events in order, so the bound is generous.
const jobAttempts = 10000

// Service runs the webhook use cases.
type Service struct {
	store        Store
	keys         Keyring
	urls         URLChecker
	plainAllowed func(host string) bool
	sender       Sender
	media        MediaReader
	retention    HistoryRetention
	now          func() time.Time
	schedule     []time.Duration
	disableAfter time.Duration
	timeout      time.Duration
	orderWait    time.Duration
	log          *slog.Logger
	// batched serves the hot reads and writes (hot.go).
	batched Batched
	fanOut  FanOut
	// opened keeps endpoints' opened secrets by account (signer).
	openedMu sync.Mutex
	opened   map[string]*openedEndpoint
}

// Deps are what the webhook use cases are built from.
type Deps struct {
	Store Store
	// Batched, when set, serves the fan-out's and the attempts' hot reads
	// and writes, batched; else each is a statement of Store's.
	Batched Batched
	Keys    Keyring
	URLs    URLChecker
	// PlainHTTPAllowed says whether a host may be called over plain http
	// (hosts in the operator's allowed private ranges).
	PlainHTTPAllowed func(host string) bool
	Sender           Sender
	// Media, when set, reads the media that endpoints ask to have inlined.
	Media MediaReader
	// Retention, when set, tells a delivery or an event the history
	// pruner deleted from one that never existed.
	Retention HistoryRetention
	Now       func() time.Time
	// Schedule, DisableAfter and Timeout default to the webhook package's
	// values; tests scale them down.
	Schedule     []time.Duration
	DisableAfter time.Duration
	Timeout      time.Duration
	// OrderWait is how long a delivery waits for an earlier event of its
	// thread to have its first attempt (25 ms by default).
	OrderWait time.Duration
	Logger    *slog.Logger
}

// NewService builds the webhook use cases.
func NewService(d Deps) *Service {
	s := &Service{
		store: d.Store, keys: d.Keys, urls: d.URLs, plainAllowed: d.PlainHTTPAllowed, sender: d.Sender, media: d.Media, retention: d.Retention,
		now: d.Now, schedule: d.Schedule, disableAfter: d.DisableAfter, timeout: d.Timeout, orderWait: d.OrderWait, log: d.Logger,
	}
	if s.now == nil {
		s.now = time.Now
	}
	clock := s.now
	s.now = func() time.Time { return clock().UTC().Truncate(time.Microsecond) }
	if len(s.schedule) == 0 {
		s.schedule = webhook.Schedule
	}
	if s.disableAfter <= 0 {
		s.disableAfter = webhook.DisableAfter
	}
	if s.timeout <= 0 {
		s.timeout = webhook.Timeout
	}
	if s.orderWait <= 0 {
		s.orderWait = 25 * time.Millisecond
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.fanOut = FanOut{now: s.now}
	s.batched = d.Batched
	if s.batched == nil {
		s.batched = inline{store: d.Store}
	}
	return s
}

// View is an endpoint as shown to its owner: Secret is set only when it
// was just made (first save, rotation) and is never shown again.
type View struct {
	Endpoint webhook.Endpoint
	Secret   string
}

func view(e webhook.Endpoint, newSecret string) View {
	e.Secret, e.PreviousSecret = "", ""
	return View{Endpoint: e, Secret: newSecret}
}

// Get reads an account's endpoint setting.
func (s *Service) Get(ctx context.Context, accountID string) (View, error) {
	rec, err := s.store.Repos().WebhookEndpoint(ctx, accountID)
	if err != nil {
		return View{}, notConfigured(err)
	}
	return view(rec.Endpoint, ""), nil
}

func notConfigured(err error) error {
	if failure.Is(err, failure.KindNotFound) {
		return &failure.Error{Kind: failure.KindNotFound, Code: "webhook_not_configured", Message: "this account has no webhook; set one with PUT"}
	}
	return err
}

// PutInput is a new endpoint setting. Enabled nil means true; Events nil
// means every event type.
type PutInput struct {
	AccountID string
	URL       string
	Enabled   *bool
	Events    []string
	// InlineMediaMaxBytes, when set, is the largest media of a
	// message.received the deliveries carry inline (0 turns it off); nil
	// keeps the current setting.
	InlineMediaMaxBytes *int64
	// Secret, when set, is a signing secret the customer chose (an A1Base
	// template sets its API secret, which its x-signature check keys
	// with). It replaces the current secret, which keeps signing for
	// webhook.RotationOverlap as after a rotation; the current secret
	// given again changes nothing. Nil keeps the current secret.
	Secret *string
}

// Put saves an account's endpoint. The first save without a Secret makes
// the signing secret, returned once; a chosen Secret is never returned.
// Enabling an endpoint the service disabled clears its failure record.
func (s *Service) Put(ctx context.Context, in PutInput) (View, error) {
	enabled := in.Enabled == nil || *in.Enabled
	settings := webhook.Settings{URL: strings.TrimSpace(in.URL), Enabled: enabled, Events: in.Events}
	types, err := settings.Check(s.plainAllowed)
	if err == nil && in.InlineMediaMaxBytes != nil {
		err = webhook.CheckInlineMediaMaxBytes(*in.InlineMediaMaxBytes, "inline_media_max_bytes")
	}
	if err == nil && in.Secret != nil {
		err = webhook.CheckSecret(*in.Secret, "secret")
	}
	if err != nil {
		return View{}, s.forbiddenOverScheme(ctx, settings.URL, err)
	}
	if s.urls != nil {
		if err := s.urls.CheckURL(ctx, settings.URL); err != nil {
			return View{}, failure.Invalid(urlForbidden(err))
		}
	}
	newSecret := ""
	rec, err := s.store.Repos().ChangeWebhookEndpoint(ctx, in.AccountID, func(rec Record, found bool) (Record, error) {
		now := s.now()
		newSecret = ""
		switch {
		case !found && in.Secret != nil:
			rec = Record{Endpoint: webhook.Endpoint{AccountID: in.AccountID, CreatedAt: now}, SealedSecret: s.seal(in.AccountID, *in.Secret)}
		case !found:
			newSecret = webhook.NewSecret()
			rec = Record{Endpoint: webhook.Endpoint{AccountID: in.AccountID, CreatedAt: now}, SealedSecret: s.seal(in.AccountID, newSecret)}
		case in.Secret != nil:
			s.replaceSecret(&rec, *in.Secret, now)
		}
		e := &rec.Endpoint
		e.URL, e.Events, e.UpdatedAt = settings.URL, types, now
		if in.InlineMediaMaxBytes != nil {
			e.InlineMediaMaxBytes = *in.InlineMediaMaxBytes
		}
		switch {
		case enabled && !e.Enabled:
			e.Enabled, e.DisabledReason, e.DisabledAt, e.FailingSince = true, "", nil, nil
		case !enabled && e.Enabled, !enabled && !found:
			e.Disable(webhook.ReasonOperator, now)
		}
		return rec, nil
	})
	if err != nil {
		return View{}, err
	}
	return view(rec.Endpoint, newSecret), nil
}

func urlForbidden(err error) failure.FieldError {
	return failure.Field("url_forbidden", "the webhook URL is not allowed: "+err.Error(), "url")
}

// forbiddenOverScheme names the real reason when plain http was refused
// for an address that is refused anyway (http://127.0.0.1:9000/ on a
// server that allows no private range): the address, whose message tells
// how an operator allows it. Plain http is only ever allowed to an IP
// literal or localhost, so only those are checked (no name is looked up
// for a URL refused already). Other problems stay as they are.
func (s *Service) forbiddenOverScheme(ctx context.Context, rawURL string, err error) error {
	fe := failure.As(err)
	i := slices.IndexFunc(fe.Fields, func(f failure.FieldError) bool { return f.Type == "url_scheme" })
	if fe.Kind != failure.KindInvalid || i < 0 || s.urls == nil {
		return err
	}
	u, perr := url.Parse(rawURL)
	if perr != nil {
		return err
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if _, aerr := netip.ParseAddr(host); aerr != nil && host != "localhost" {
		return err
	}
	uerr := s.urls.CheckURL(ctx, rawURL)
	if uerr == nil {
		return err
	}
	fields := slices.Clone(fe.Fields)
	fields[i] = urlForbidden(uerr)
	return failure.Invalid(fields...)
}

// RotateSecret makes a new signing secret, returned once; the previous
// one keeps signing for webhook.RotationOverlap.
func (s *Service) RotateSecret(ctx context.Context, accountID string) (View, error) {
	next := ""
	rec, err := s.store.Repos().ChangeWebhookEndpoint(ctx, accountID, func(rec Record, found bool) (Record, error) {
		if !found {
			return Record{}, notConfigured(failure.NotFound("webhook"))
		}
		now := s.now()
		next = webhook.NewSecret()
		rec.SealedPrevious, rec.Endpoint.PreviousUntil = rec.SealedSecret, now.Add(webhook.RotationOverlap)
		rec.SealedSecret = s.seal(accountID, next)
		rec.Endpoint.UpdatedAt = now
		return rec, nil
	})
	if err != nil {
		return View{}, err
	}
	return view(rec.Endpoint, next), nil
}

// replaceSecret makes next the endpoint's signing secret, the current one
// signing beside it for webhook.RotationOverlap; when next is the current
// secret, nothing changes. A current secret that no longer opens (sealed
// under another server key) signs nothing, and is dropped.
func (s *Service) replaceSecret(rec *Record, next string, now time.Time) {
	current, err := s.keys.Open(rec.SealedSecret, "webhook:"+rec.Endpoint.AccountID)
	switch {
	case err == nil && string(current) == next:
		return
	case err == nil:
		rec.SealedPrevious, rec.Endpoint.PreviousUntil = rec.SealedSecret, now.Add(webhook.RotationOverlap)
	default:
		rec.SealedPrevious, rec.Endpoint.PreviousUntil = nil, time.Time{}
	}
	rec.SealedSecret = s.seal(rec.Endpoint.AccountID, next)
}

func (s *Service) seal(accountID, secret string) []byte {
	return s.keys.Seal([]byte(secret), "webhook:"+accountID)
}

// open fills in an endpoint's plain secrets.
func (s *Service) open(rec Record) (webhook.Endpoint, error) {
	e := rec.Endpoint
	plain, err := s.keys.Open(rec.SealedSecret, "webhook:"+e.AccountID)
	if err != nil {
		return e, fmt.Errorf("open webhook secret: %w", err)
	}
	e.Secret = string(plain)
	if len(rec.SealedPrevious) > 0 {
		if prev, err := s.keys.Open(rec.SealedPrevious, "webhook:"+e.AccountID); err == nil {
			e.PreviousSecret = string(prev)
		}
	}
	return e, nil
}

// maxOpened bounds the opened endpoints kept.
const maxOpened = 10_000

// openedEndpoint is an endpoint's secrets, opened, with their signers.
type openedEndpoint struct {
	sealed, sealedPrevious string
	secret, previous       string
	// signers by the secrets that sign: the current one alone, or both
	// during a rotation.
	signers map[string]*webhook.Signer
}

// signer returns the endpoint with its secrets and the signer for now.
// Every delivery of an endpoint uses the same secrets, so they are opened
// (an AES-GCM decryption each) and their HMAC keys prepared once, and kept
// while the sealed bytes stay the same: a rotation changes them.
func (s *Service) signer(rec Record, now time.Time) (webhook.Endpoint, *webhook.Signer, error) {
	s.openedMu.Lock()
	o, ok := s.opened[rec.Endpoint.AccountID]
	s.openedMu.Unlock()
	if !ok || o.sealed != string(rec.SealedSecret) || o.sealedPrevious != string(rec.SealedPrevious) {
		ep, err := s.open(rec)
		if err != nil {
			return ep, nil, err
		}
		o = &openedEndpoint{
			sealed: string(rec.SealedSecret), sealedPrevious: string(rec.SealedPrevious),
			secret: ep.Secret, previous: ep.PreviousSecret, signers: map[string]*webhook.Signer{},
		}
	}
	ep := rec.Endpoint
	ep.Secret, ep.PreviousSecret = o.secret, o.previous
	secrets := ep.SigningSecrets(now)
	key := strings.Join(secrets, " ")
	s.openedMu.Lock()
	defer s.openedMu.Unlock()
	sg, ok := o.signers[key]
	if !ok {
		var err error
		if sg, err = webhook.NewSigner(secrets); err != nil {
			return ep, nil, err
		}
		o.signers[key] = sg
	}
	if s.opened == nil || len(s.opened) >= maxOpened {
		s.opened = map[string]*openedEndpoint{}
	}
	s.opened[rec.Endpoint.AccountID] = o
	return ep, sg, nil
}

// Test records a webhook.test event and delivers it to the endpoint.
//
// answer, when set, records the answer under its Idempotency-Key in the
// transaction that enqueues the delivery (Replay too).
func (s *Service) Test(ctx context.Context, accountID string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error) {
	var out webhook.Delivery
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		rec, err := tx.WebhookEndpoint(ctx, accountID)
		if err != nil {
			return writes.Batch{}, notConfigured(err)
		}
		if !rec.Endpoint.Enabled {
			return writes.Batch{}, failure.Conflict("webhook_disabled", "the webhook is disabled; enable it with PUT first")
		}
		now := s.now()
		id := ident.New(ident.Event)
		payload, _ := json.Marshal(map[string]any{
			"event": event.WebhookTest, "event_id": id, "a1_account_id": accountID,
			"timestamp": now.Format(webhook.TimeFormat), "message": "test delivery from Switchboard",
		})
		e := event.Event{ID: id, AccountID: accountID, Type: event.WebhookTest, Payload: payload, CreatedAt: now}
		out = newDelivery(e, now)
		return writes.Batch{
			Events: []event.Event{e}, Deliveries: []webhook.Delivery{out},
			// No unique key: the delivery is new, so nothing else enqueues it.
			Jobs:    []jobs.EnqueueParams{deliveryJob(out, "")},
			Answers: writes.Answering(answer, out),
		}, nil
	})
	return out, err
}

// React adds to b, for each of its events that the account's endpoint is
// enabled and subscribed to, a pending delivery and its job, so that the
// event and its delivery commit together (writes.Reactions: the committer
// runs it on every batch). The endpoints are read as they are now, through
// the service's store, one query for the batch; an attempt reads its
// endpoint again and sends nothing to one disabled since.
func (s *Service) React(ctx context.Context, b *writes.Batch) error {
	return s.ReactingThrough(s.store.Repos()).React(ctx, b)
}

// EndpointsReader reads the webhook endpoints of accounts.
type EndpointsReader interface {
	WebhookEndpoints(ctx context.Context, accountIDs []string) ([]Record, error)
}

// ReactingThrough returns the reactions of React, reading the endpoints
// through r (FanOut.Through) with the service's clock.
func (s *Service) ReactingThrough(r EndpointsReader) writes.Reactions {
	return s.fanOut.Through(r)
}

// FanOut is the webhook feature's reaction to committed events: for each
// event of a batch that its account's endpoint is enabled and subscribed
// to, it adds a pending delivery and its job to the batch, so that the
// event and its delivery commit together. It needs no store, so that the
// committer that runs it can be built with it.
type FanOut struct{ now func() time.Time }

// NewFanOut returns the fan-out stamping deliveries with now (time.Now
// when nil), in UTC to the microsecond.
func NewFanOut(now func() time.Time) FanOut {
	if now == nil {
		now = time.Now
	}
	return FanOut{now: func() time.Time { return now().UTC().Truncate(time.Microsecond) }}
}

// Through returns the fan-out's writes.Reactions, reading the endpoints
// through r: for a batch written inside a transaction, the store hands the
// transaction's connection, so that the reaction does not wait for a
// second connection while the transaction holds one.
func (f FanOut) Through(r EndpointsReader) writes.Reactions {
	return reactions{now: f.now, endpoints: r}
}

// reactions are the fan-out's writes.Reactions reading through endpoints.
type reactions struct {
	now       func() time.Time
	endpoints EndpointsReader
}

func (x reactions) React(ctx context.Context, b *writes.Batch) error {
	if len(b.Events) == 0 {
		return nil
	}
	// An event the batch delivers already (a test delivery) is left.
	delivered := make(map[string]bool, len(b.Deliveries))
	for _, d := range b.Deliveries {
		delivered[d.EventID] = true
	}
	var accounts []string
	seen := map[string]bool{}
	for _, e := range b.Events {
		if !seen[e.AccountID] && !delivered[e.ID] {
			seen[e.AccountID] = true
			accounts = append(accounts, e.AccountID)
		}
	}
	if len(accounts) == 0 {
		return nil
	}
	recs, err := x.endpoints.WebhookEndpoints(ctx, accounts)
	if err != nil {
		return err
	}
	endpoints := make(map[string]webhook.Endpoint, len(recs))
	for _, rec := range recs {
		endpoints[rec.Endpoint.AccountID] = rec.Endpoint
	}
	for _, e := range b.Events {
		ep, ok := endpoints[e.AccountID]
		if !ok || !ep.Enabled || !ep.Subscribed(e.Type) || delivered[e.ID] {
			continue
		}
		d := newDelivery(e, x.now())
		b.Deliveries = append(b.Deliveries, d)
		// No unique key: the delivery is new, so nothing else enqueues it.
		b.Jobs = append(b.Jobs, deliveryJob(d, ""))
	}
	return nil
}

// EndpointKey is what a delivery calls, for the runner's per-endpoint
// limit and circuit breaker: the account's webhook endpoint (an account
// has one). Not the URL's host: receivers of many accounts may share a
// host (a hosted automation service), and one account's hanging path
// must not hold back another's.
func EndpointKey(accountID string) string { return "webhook:" + accountID }

type deliverPayload struct {
	DeliveryID string `json:"delivery_id"`
}

// newDelivery is a pending delivery of e, due now.
func newDelivery(e event.Event, now time.Time) webhook.Delivery {
	return webhook.Delivery{
		ID: ident.New(ident.Webhook), AccountID: e.AccountID, EventID: e.ID, EventType: e.Type, ThreadID: e.ThreadID,
		Status: webhook.Pending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
	}
}

// deliveryJob is d's delivery job; uniqueKey, when set, keeps it from
// being enqueued twice while one is pending or running.
func deliveryJob(d webhook.Delivery, uniqueKey string) jobs.EnqueueParams {
	payload, _ := json.Marshal(deliverPayload{DeliveryID: d.ID})
	return jobs.EnqueueParams{
		Kind: DeliverKind, Payload: payload, UniqueKey: uniqueKey, PaceKey: PaceKey(d), MaxAttempts: jobAttempts, RunAt: d.NextAttemptAt,
		AccountID: d.AccountID, EndpointKey: EndpointKey(d.AccountID),
	}
}

// PaceKey groups the deliveries of one thread (or, without a thread, of
// one account), so a runner starts them one at a time: in order.
func PaceKey(d webhook.Delivery) string {
	if d.ThreadID != "" {
		return "whk:" + d.AccountID + ":" + d.ThreadID
	}
	return "whk:" + d.AccountID
}

// Deliveries lists an account's deliveries with their attempt logs.
func (s *Service) Deliveries(ctx context.Context, q DeliveryQuery) ([]webhook.Delivery, int, error) {
	return s.store.Repos().WebhookDeliveries(ctx, q)
}

// Replay delivers a delivery again, with the same webhook-id and a fresh
// schedule; its earlier attempts stay in the log.
func (s *Service) Replay(ctx context.Context, accountID, id string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error) {
	if !ident.Valid(ident.Webhook, id) {
		return webhook.Delivery{}, failure.NotFound("delivery")
	}
	var (
		out     webhook.Delivery
		missing bool
	)
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		rec, err := tx.WebhookEndpoint(ctx, accountID)
		if err != nil {
			return writes.Batch{}, notConfigured(err)
		}
		if !rec.Endpoint.Enabled {
			return writes.Batch{}, failure.Conflict("webhook_disabled", "the webhook is disabled; enable it with PUT first")
		}
		d, err := tx.WebhookDelivery(ctx, accountID, id)
		if err != nil {
			missing = failure.Is(err, failure.KindNotFound)
			return writes.Batch{}, err
		}
		now := s.now()
		d.Status, d.Attempts, d.NextAttemptAt, d.UpdatedAt = webhook.Pending, 0, now, now
		d.Payload = nil
		out = d
		// Its own job, without the delivery's unique key: the job that
		// delivered it may still hold that key (completions are written
		// in batches, after the delivery is marked), and a replay must
		// not be folded into it. A second replay's job finds the delivery
		// sent by the first and leaves it.
		return writes.Batch{
			DeliveryStates: []webhook.Delivery{d},
			Jobs:           []jobs.EnqueueParams{deliveryJob(d, "")},
			Answers:        writes.Answering(answer, out),
		}, nil
	})
	if missing {
		if period, ok := s.pruned(ctx, accountID, ident.Webhook, id); ok {
			return webhook.Delivery{}, deliveryPruned(id, period)
		}
	}
	return out, err
}

// MaxUpdates bounds one page of polled events; DefaultUpdates is the page
// size when none is asked for.
const (
	MaxUpdates     = 100
	DefaultUpdates = 20
)

// Updates reads an account's events after the cursor (an event id),
// oldest first, and the cursor to ask with next (the last event's id, or
// the same cursor when there was nothing new).
func (s *Service) Updates(ctx context.Context, accountID, after string, limit int) ([]event.Event, string, error) {
	if limit <= 0 {
		limit = DefaultUpdates
	}
	limit = min(limit, MaxUpdates)
	if after != "" && !ident.Valid(ident.Event, after) {
		return nil, "", unknownCursor()
	}
	evs, err := s.store.Repos().EventsAfter(ctx, accountID, after, limit)
	if failure.Is(err, failure.KindNotFound) {
		if period, ok := s.pruned(ctx, accountID, ident.Event, after); ok {
			return nil, "", cursorPruned(period)
		}
		return nil, "", unknownCursor()
	}
	if err != nil {
		return nil, "", err
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].ID
	}
	return evs, next, nil
}

func unknownCursor() error {
	return failure.Invalid(failure.FieldError{In: "query", Path: []any{"after"}, Message: "after must be an event id returned by this account's updates", Type: "value_error"})
}

// Acknowledge confirms that the client received the payload about
// message id; NotFound when the account has no such message.
func (s *Service) Acknowledge(ctx context.Context, accountID, messageID string) error {
	if !ident.Valid(ident.Message, messageID) {
		return failure.NotFound("message")
	}
	_, err := s.store.Repos().Message(ctx, accountID, messageID)
	return err
}

// errWaitingForOrder delays a delivery behind an earlier one of its thread.
var errWaitingForOrder = errors.New("waiting for an earlier event of the thread")
