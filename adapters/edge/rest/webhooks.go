package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// WebhookUseCases is what the REST adapter needs from the webhook use cases.
type WebhookUseCases interface {
	Get(ctx context.Context, accountID string) (webhooks.View, error)
	Put(ctx context.Context, in webhooks.PutInput) (webhooks.View, error)
	RotateSecret(ctx context.Context, accountID string) (webhooks.View, error)
	Test(ctx context.Context, accountID string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error)
	Deliveries(ctx context.Context, q webhooks.DeliveryQuery) ([]webhook.Delivery, int, error)
	Replay(ctx context.Context, accountID, id string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error)
	Updates(ctx context.Context, accountID, after string, limit int) ([]event.Event, string, error)
	Acknowledge(ctx context.Context, accountID, messageID string) error
}

func (s *server) mountWebhooks(api *edge.Routes) {
	if s.webhooks == nil {
		return
	}
	api.Handle(http.MethodGet, "/accounts/{accountId}/webhook", s.getWebhook)
	api.Handle(http.MethodPut, "/accounts/{accountId}/webhook", s.putWebhook)
	api.Handle(http.MethodPost, "/accounts/{accountId}/webhook/rotate-secret", s.idempotentKeeping(s.rotateWebhookSecret, withoutSecret))
	api.Handle(http.MethodPost, "/accounts/{accountId}/webhook/test", s.idempotentAnswering(s.testWebhook))
	api.Handle(http.MethodGet, "/accounts/{accountId}/webhook/deliveries", s.listWebhookDeliveries)
	api.Handle(http.MethodPost, "/accounts/{accountId}/webhook/deliveries/{deliveryId}/replay", s.idempotentAnswering(s.replayWebhookDelivery))
	api.Handle(http.MethodGet, "/messages/updates", s.messageUpdates)
	api.Handle(http.MethodPost, "/messages/wa/whatsapp/incoming", s.idempotent(s.acknowledgeIncoming))
}

// subscribable are the types a PUT may name; an endpoint without a list
// gets all of them.
func subscribable() []string {
	types := webhook.Subscribable()
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}

func webhookJSON(v webhooks.View) map[string]any {
	e := v.Endpoint
	events := subscribable()
	if len(e.Events) > 0 {
		events = make([]string, len(e.Events))
		for i, t := range e.Events {
			events[i] = string(t)
		}
	}
	out := map[string]any{
		"account_id": e.AccountID, "url": e.URL, "enabled": e.Enabled, "events": events, "all_events": len(e.Events) == 0,
		"disabled_reason": e.DisabledReason, "created_at": timestamp(e.CreatedAt), "updated_at": timestamp(e.UpdatedAt),
		"inline_media_max_bytes": e.InlineMediaMaxBytes,
	}
	if v.Secret != "" {
		out["secret"] = v.Secret
	}
	if !e.PreviousUntil.IsZero() && e.PreviousUntil.After(e.UpdatedAt) {
		out["previous_secret_expires_at"] = timestamp(e.PreviousUntil)
	}
	if e.DisabledAt != nil {
		out["disabled_at"] = timestamp(*e.DisabledAt)
	}
	if e.FailingSince != nil {
		out["failing_since"] = timestamp(*e.FailingSince)
	}
	return map[string]any{"status": "success", "data": out}
}

func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) {
	v, err := s.webhooks.Get(r.Context(), mux.Vars(r)["accountId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, webhookJSON(v))
}

type webhookBody struct {
	URL     *string   `json:"url"`
	Enabled *bool     `json:"enabled"`
	Events  *[]string `json:"events"`
	// InlineMediaMaxBytes absent keeps the current setting.
	InlineMediaMaxBytes *int64 `json:"inline_media_max_bytes"`
	// Secret absent (or null) keeps the signing secret.
	Secret *string `json:"secret"`
}

func (s *server) putWebhook(w http.ResponseWriter, r *http.Request) {
	var b webhookBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.URL, "url")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	in := webhooks.PutInput{AccountID: mux.Vars(r)["accountId"], URL: *b.URL, Enabled: b.Enabled, InlineMediaMaxBytes: b.InlineMediaMaxBytes, Secret: b.Secret}
	if b.Events != nil {
		in.Events = *b.Events
	}
	v, err := s.webhooks.Put(r.Context(), in)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, webhookJSON(v))
}

// withoutSecret drops the secret from a stored rotate-secret answer: a
// replay says the rotation happened but does not show the secret again,
// which is kept nowhere in plain text.
func withoutSecret(body []byte) []byte {
	var v struct {
		Status string         `json:"status"`
		Data   map[string]any `json:"data"`
	}
	if json.Unmarshal(body, &v) != nil || v.Data == nil {
		return body
	}
	delete(v.Data, "secret")
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

func (s *server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	v, err := s.webhooks.RotateSecret(r.Context(), mux.Vars(r)["accountId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, webhookJSON(v))
}

func deliveryJSON(d webhook.Delivery) map[string]any {
	attempts := make([]map[string]any, len(d.Log))
	for i, a := range d.Log {
		attempts[i] = map[string]any{
			"attempted_at": timestamp(a.At), "status_code": a.StatusCode, "latency_ms": float64(a.Latency.Microseconds()) / 1000,
			"error": a.Error, "response": a.Response, "interrupted": a.Interrupted,
		}
	}
	out := map[string]any{
		"id": d.ID, "event_id": d.EventID, "event_type": string(d.EventType), "thread_id": d.ThreadID, "status": string(d.Status),
		"attempt_count": len(d.Log), "last_status_code": d.LastStatusCode, "last_error": d.LastError,
		"created_at": timestamp(d.CreatedAt), "updated_at": timestamp(d.UpdatedAt), "attempts": attempts,
	}
	if d.Status == webhook.Pending {
		out["next_attempt_at"] = timestamp(d.NextAttemptAt)
	}
	return out
}

func (s *server) testWebhook(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	d, err := s.webhooks.Test(r.Context(), mux.Vars(r)["accountId"], edge.AnswerWith(key, deliveryAcceptedAnswer))
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, deliveryAcceptedAnswer(d))
}

// deliveryAcceptedAnswer is the answer to a test or a replay, as written
// and as recorded for its Idempotency-Key.
func deliveryAcceptedAnswer(d webhook.Delivery) idempotency.Response {
	return jsonAnswer(http.StatusAccepted, map[string]any{"status": "success", "data": deliveryJSON(d)})
}

func (s *server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := listParams(r)
	var p failure.Problems
	if err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	q := webhooks.DeliveryQuery{AccountID: mux.Vars(r)["accountId"], Limit: limit, Offset: offset}
	if v := r.URL.Query().Get("status"); v != "" {
		st, ok := webhook.ParseStatus(v)
		if !ok {
			p = append(p, failure.FieldError{In: "query", Path: []any{"status"}, Message: "status must be one of pending, succeeded, failed", Type: "enum"})
		}
		q.Status = st
	}
	if v := r.URL.Query().Get("event_type"); v != "" {
		q.EventType = event.Type(v)
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	list, total, err := s.webhooks.Deliveries(r.Context(), q)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	items := make([]map[string]any, len(list))
	for i, d := range list {
		items[i] = deliveryJSON(d)
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": items, "total_count": total, "has_more": offset+len(list) < total})
}

func (s *server) replayWebhookDelivery(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	vars := mux.Vars(r)
	d, err := s.webhooks.Replay(r.Context(), vars["accountId"], vars["deliveryId"], edge.AnswerWith(key, deliveryAcceptedAnswer))
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, deliveryAcceptedAnswer(d))
}

func (s *server) messageUpdates(w http.ResponseWriter, r *http.Request) {
	principal, _ := accounts.PrincipalFrom(r.Context())
	limit := webhooks.DefaultUpdates
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			edge.WriteError(w, r, failure.Invalid(failure.FieldError{In: "query", Path: []any{"limit"}, Message: "limit must be an integer of at least 1", Type: "greater_than_equal"}))
			return
		}
		limit = n
	}
	evs, next, err := s.webhooks.Updates(r.Context(), principal.AccountID, r.URL.Query().Get("after"), limit)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	items := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		items[i] = json.RawMessage(e.Payload)
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": items, "next_cursor": cursor})
}

// acknowledgeIncoming takes a webhook payload the client received, with
// whatever fields it has, and acknowledges it by its message_id.
func (s *server) acknowledgeIncoming(w http.ResponseWriter, r *http.Request) {
	var b map[string]json.RawMessage
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var id string
	raw, ok := b["message_id"]
	if !ok {
		edge.WriteError(w, r, failure.Invalid(failure.Field("missing", "Field required", "message_id")))
		return
	}
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		edge.WriteError(w, r, failure.Invalid(failure.Field("string_type", "message_id must be a message id string", "message_id")))
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	if err := s.webhooks.Acknowledge(r.Context(), principal.AccountID, id); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "received", "message_id": id})
}
