package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Work makes one attempt of a delivery: the delivery job's handler. It
// signs the event's payload anew (same webhook-id, new timestamp), posts
// it, logs the attempt, and schedules the next one on failure. It is
// idempotent: a delivery that is no longer pending is left alone.
func (s *Service) Work(ctx context.Context, job jobs.Job) error {
	var p deliverPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("webhook delivery payload: %w", err))
	}
	sendable, err := s.batched.Sendable(ctx, p.DeliveryID)
	if failure.Is(err, failure.KindNotFound) {
		return nil // deleted with its account
	}
	if err != nil {
		return err
	}
	d, rec := sendable.Delivery, sendable.Endpoint
	if d.Status != webhook.Pending {
		return nil
	}
	if !sendable.Found || !rec.Endpoint.Enabled {
		// Disabled (or removed) since the event: nothing is sent.
		d.Status, d.LastError, d.UpdatedAt = webhook.Failed, "endpoint disabled", s.now()
		return s.saveDelivery(ctx, d)
	}
	if job.Interrupted > 0 {
		if err := s.logInterrupted(ctx, d, job); err != nil {
			return err
		}
	}
	if d.Attempts == 0 && sendable.EarlierUntried {
		// Keep a thread's events in order while the receiver is healthy:
		// wait until every earlier one has had its first attempt.
		return jobs.RetryAfter(s.orderWait, errWaitingForOrder)
	}
	started := s.now()
	ep, signer, err := s.signer(rec, started)
	if err != nil {
		// Retrying cannot help (another server key?); the delivery fails
		// so it does not hold its thread's later events back.
		d.Status, d.LastError, d.UpdatedAt = webhook.Failed, err.Error(), s.now()
		if uerr := s.saveDelivery(ctx, d); uerr != nil {
			return uerr
		}
		return jobs.Permanent(err)
	}
	body := s.withInlineMedia(ctx, rec.Endpoint, d)
	res, sendErr := s.post(ctx, ep, signer, d, body, started)
	latency := s.now().Sub(started)
	if sendErr == nil && res.StatusCode >= 200 && res.StatusCode < 300 && rec.Endpoint.FailingSince == nil {
		// The common case, a healthy endpoint's success, is written in a
		// shared transaction with other workers' successes.
		now := s.now()
		d.Attempts++
		d.Status, d.LastStatusCode, d.LastError, d.UpdatedAt = webhook.Succeeded, res.StatusCode, "", now
		return s.batched.RecordSuccess(ctx, LoggedSuccess{Delivery: d, Attempt: webhook.Attempt{At: started, StatusCode: res.StatusCode, Latency: latency, Response: printable(res.Body)}})
	}
	return s.record(ctx, d, res, sendErr, started, latency)
}

// logInterrupted logs the attempt of an earlier run of job that its
// process's death cut off: interrupted, no failure, not counted in the
// delivery's attempts, the endpoint's health left as it is. Each run that
// starts after such a death logs it, before its own attempt.
func (s *Service) logInterrupted(ctx context.Context, d webhook.Delivery, job jobs.Job) error {
	a := webhook.Attempt{At: job.InterruptedAt, Interrupted: true, Error: webhook.InterruptedError}
	if job.Interrupted > 1 {
		a.Error = fmt.Sprintf("%s; %d runs in a row were cut off", a.Error, job.Interrupted)
	}
	return s.store.Decide(ctx, func(context.Context, TxReads) (writes.Batch, error) {
		return writes.Batch{Attempts: []writes.Attempt{{DeliveryID: d.ID, Attempt: a}}}, nil
	})
}

// saveDelivery writes d's new state (writes.Batch.DeliveryStates).
func (s *Service) saveDelivery(ctx context.Context, d webhook.Delivery) error {
	return s.store.Decide(ctx, func(context.Context, TxReads) (writes.Batch, error) {
		return writes.Batch{DeliveryStates: []webhook.Delivery{d}}, nil
	})
}

// post signs and sends one attempt of d, body, within the attempt
// timeout.
func (s *Service) post(ctx context.Context, ep webhook.Endpoint, signer *webhook.Signer, d webhook.Delivery, body []byte, now time.Time) (Response, error) {
	return s.send(ctx, ep.URL, signedHeader(signer, d.ID, string(d.EventType), now, body), body)
}

// signedHeader is the header of a POST of body signed by signer (nil:
// unsigned) under webhook-id id, with x-event-type eventType.
func signedHeader(signer *webhook.Signer, id, eventType string, now time.Time, body []byte) map[string]string {
	header := map[string]string{
		"Content-Type": "application/json",
		"User-Agent":   "Switchboard-Webhooks/1",
		"x-event-type": eventType,
	}
	if signer == nil {
		return header
	}
	sig := signer.Sign(id, now, body)
	header["webhook-id"] = sig.ID
	header["webhook-timestamp"] = sig.Timestamp
	header["webhook-signature"] = sig.Standard
	header["x-timestamp"] = sig.Timestamp
	header["x-signature"] = sig.Legacy
	if sig.LegacyPrevious != "" {
		header["x-signature-previous"] = sig.LegacyPrevious
	}
	return header
}

// send POSTs body with header to url within the attempt timeout.
func (s *Service) send(ctx context.Context, url string, header map[string]string, body []byte) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.sender.Post(ctx, Request{URL: url, Header: header, Body: body})
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s: %w", s.timeout, err)
	}
	return res, err
}

// PostSigned POSTs the JSON body to url for the account, signed with the
// account's webhook secrets as a delivery is (the current one, and the
// previous one during a rotation), under webhook-id id, with x-event-type
// event; unsigned when the account has no webhook. It goes through the
// SSRF-guarded sender, without following redirects, within the attempt
// timeout, and returns the answer's status code, or an error when none
// came.
func (s *Service) PostSigned(ctx context.Context, accountID, id, event, url string, body []byte) (int, error) {
	var signer *webhook.Signer
	now := s.now()
	rec, err := s.store.Repos().WebhookEndpoint(ctx, accountID)
	switch {
	case err == nil:
		if _, signer, err = s.signer(rec, now); err != nil {
			return 0, err
		}
	case !failure.Is(err, failure.KindNotFound):
		return 0, err
	}
	res, err := s.send(ctx, url, signedHeader(signer, id, event, now, body), body)
	return res.StatusCode, err
}

// record logs the attempt and moves the delivery and the endpoint's
// health in one transaction.
func (s *Service) record(ctx context.Context, d webhook.Delivery, res Response, sendErr error, at time.Time, latency time.Duration) error {
	success := sendErr == nil && res.StatusCode >= 200 && res.StatusCode < 300
	attempt := webhook.Attempt{At: at, StatusCode: res.StatusCode, Latency: latency, Response: printable(res.Body)}
	switch {
	case sendErr != nil:
		attempt.Error = sendErr.Error()
	case res.StatusCode >= 300 && res.StatusCode < 400:
		attempt.Error = fmt.Sprintf("redirect %d is not followed; set the final URL", res.StatusCode)
	case !success:
		attempt.Error = fmt.Sprintf("status %d %s", res.StatusCode, http.StatusText(res.StatusCode))
	}
	var retry time.Duration
	var again bool
	// The outcome is recorded even when the job's context is ending.
	ctx = context.WithoutCancel(ctx)
	gone := false
	err := s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		// The delivery is locked until the outcome is written; one
		// deleted while the attempt was under way (its person erased)
		// logs nothing and is not retried.
		if _, err := tx.WebhookDelivery(ctx, d.AccountID, d.ID); failure.Is(err, failure.KindNotFound) {
			gone = true
			return writes.Batch{}, nil
		} else if err != nil {
			return writes.Batch{}, err
		}
		now := s.now()
		d.Attempts++
		d.LastStatusCode, d.LastError, d.UpdatedAt = res.StatusCode, attempt.Error, now
		rec, err := tx.WebhookEndpoint(ctx, d.AccountID)
		if err != nil {
			return writes.Batch{}, err
		}
		b := writes.Batch{Attempts: []writes.Attempt{{DeliveryID: d.ID, Attempt: attempt}}}
		e := &rec.Endpoint
		switch {
		case success:
			d.Status = webhook.Succeeded
			if e.FailingSince != nil {
				e.FailingSince = nil
				b.EndpointHealth = []webhook.Endpoint{*e}
			}
		case res.StatusCode == http.StatusGone:
			d.Status = webhook.Failed
			b.Add(s.disable(*e, webhook.ReasonGone, now, "the receiver answered 410 Gone"))
		default:
			failing := e.RecordFailure(now, s.disableAfter)
			if failing && e.Enabled {
				b.Add(s.disable(*e, webhook.ReasonFailing, now, "every attempt failed since "+e.FailingSince.Format(time.RFC3339)))
			} else {
				b.EndpointHealth = []webhook.Endpoint{*e}
			}
			if retry, again = webhook.NextDelay(s.schedule, d.Attempts, res.RetryAfter); again && !failing {
				d.NextAttemptAt = now.Add(retry)
			} else {
				d.Status, again = webhook.Failed, false
			}
		}
		b.DeliveryStates = []webhook.Delivery{d}
		return b, nil
	})
	if err != nil || gone {
		return err
	}
	if again {
		err := fmt.Errorf("attempt %d: %s", d.Attempts, attempt.Error)
		if sendErr != nil || res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests {
			// No answer, or the receiver is unavailable: a failure
			// towards the endpoint's circuit breaker. Other answers (a
			// 4xx) came back promptly.
			err = jobs.EndpointDown(err)
		}
		return jobs.RetryAfter(retry, err)
	}
	return nil
}

// disable is what turning the endpoint off writes: its health, and an
// endpoint.disabled record on the account's event log.
func (s *Service) disable(e webhook.Endpoint, reason string, now time.Time, why string) writes.Batch {
	e.Disable(reason, now)
	id := ident.New(ident.Event)
	payload, _ := json.Marshal(map[string]any{
		"event": event.EndpointDisabled, "event_id": id, "a1_account_id": e.AccountID,
		"url": e.URL, "reason": reason, "detail": why, "timestamp": now.Format(webhook.TimeFormat),
	})
	s.log.Warn("webhook endpoint disabled", "account_id", e.AccountID, "reason", reason)
	return writes.Batch{
		EndpointHealth: []webhook.Endpoint{e},
		Events:         []event.Event{{ID: id, AccountID: e.AccountID, Type: event.EndpointDisabled, Payload: payload, CreatedAt: now}},
	}
}

// printable keeps the response prefix storable as text.
func printable(b []byte) string {
	if len(b) > webhook.MaxResponseBytes {
		b = b[:webhook.MaxResponseBytes]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(string(b), string(utf8.RuneError)), "\x00", "")
}
