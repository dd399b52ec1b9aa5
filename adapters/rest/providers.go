package rest

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// ProviderWebhooks is what the inbound provider routes hand their requests
// to. Each method checks the provider's signature (or token) itself, in
// constant time, before it trusts anything in the request.
type ProviderWebhooks interface {
	// TelegramWebhook takes a Bot API update; secret is the
	// X-Telegram-Bot-Api-Secret-Token header.
	TelegramWebhook(ctx context.Context, numberID, secret string, body []byte) error
	// WhatsAppVerify answers the Cloud API subscription handshake with the
	// challenge to echo.
	WhatsAppVerify(ctx context.Context, numberID, mode, token, challenge string) (string, error)
	// WhatsAppWebhook takes a Cloud API notification; signature is the
	// X-Hub-Signature-256 header.
	WhatsAppWebhook(ctx context.Context, numberID, signature string, body []byte) error
}

// mountProviders adds the routes the providers call. They carry no API
// key: the provider's signature authenticates them, so they sit outside
// the authenticated /v1 subrouter, with the body limit of every route, a
// rate limit per agent number, and the failed-authentication budget per
// client address.
func (s *server) mountProviders(top *routes) {
	if s.providers == nil {
		return
	}
	top.Handle(http.MethodPost, "/v1/providers/telegram/{numberId}/webhook", s.providerRoute(s.telegramWebhook))
	top.Handle(http.MethodGet, "/v1/providers/whatsapp/{numberId}/webhook", s.providerRoute(s.whatsappVerify))
	top.Handle(http.MethodPost, "/v1/providers/whatsapp/{numberId}/webhook", s.providerRoute(s.whatsappWebhook))
}

// providerRoute applies the limits of the provider routes around h.
func (s *server) providerRoute(h func(w http.ResponseWriter, r *http.Request, numberID string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ri := infoFrom(r.Context())
		if tmpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
			ri.route = tmpl
		}
		client := clientAddress(r)
		if wait := s.authFailures.blocked(client); wait > 0 {
			writeError(w, r, failure.RateLimited("too many failed webhook signatures from this address", wait))
			return
		}
		numberID := mux.Vars(r)["numberId"]
		if !ident.Valid(ident.Number, numberID) {
			// Not a number id: answered before it can take a rate bucket.
			writeError(w, r, failure.NotFound("number"))
			return
		}
		if wait := s.accountLimits.take("provider:" + numberID); wait > 0 {
			writeError(w, r, failure.RateLimited("rate limit exceeded for this agent number", wait))
			return
		}
		if err := h(w, r, numberID); err != nil {
			// Only failed signatures and tokens count against the client
			// address: a provider's own addresses also carry good traffic.
			if failure.Is(err, failure.KindUnauthenticated) || failure.As(err).Code == "verification_failed" {
				s.authFailures.record(client)
			}
			writeError(w, r, err)
		}
	}
}

// readBody reads the raw body (the signature covers its exact bytes).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &failure.Error{Kind: failure.KindTooLarge, Code: "payload_too_large", Message: "request body is too large"}
	}
	return body, err
}

func (s *server) telegramWebhook(w http.ResponseWriter, r *http.Request, numberID string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := s.providers.TelegramWebhook(r.Context(), numberID, r.Header.Get("X-Telegram-Bot-Api-Secret-Token"), body); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *server) whatsappVerify(w http.ResponseWriter, r *http.Request, numberID string) error {
	q := r.URL.Query()
	challenge, err := s.providers.WhatsAppVerify(r.Context(), numberID, q.Get("hub.mode"), q.Get("hub.verify_token"), q.Get("hub.challenge"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, challenge)
	return nil
}

func (s *server) whatsappWebhook(w http.ResponseWriter, r *http.Request, numberID string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := s.providers.WhatsAppWebhook(r.Context(), numberID, r.Header.Get("X-Hub-Signature-256"), body); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}
