package rest

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// ProviderWebhooks is what the inbound provider routes hand their requests
// to. Each method checks the provider's signature (or token) itself, in
// constant time, before it trusts anything in the request; the posts come
// back verified and not yet stored, so that only verified posts are
// charged to their number's rate limit.
type ProviderWebhooks interface {
	// TelegramWebhook checks a Bot API update; secret is the
	// X-Telegram-Bot-Api-Secret-Token header. Unauthenticated when it
	// does not match.
	TelegramWebhook(ctx context.Context, numberID, secret string, body []byte) (VerifiedPost, error)
	// WhatsAppVerify answers the Cloud API subscription handshake with the
	// challenge to echo; Forbidden (verification_failed) for a wrong token.
	WhatsAppVerify(ctx context.Context, numberID, mode, token, challenge string) (string, error)
	// WhatsAppWebhook checks a Cloud API notification; signature is the
	// X-Hub-Signature-256 header. Unauthenticated when it does not verify.
	WhatsAppWebhook(ctx context.Context, numberID, signature string, body []byte) (VerifiedPost, error)
}

// VerifiedPost is a provider post whose signature checked out.
type VerifiedPost interface {
	// Deliver stores what the post carries.
	Deliver(ctx context.Context) error
}

// providerAnswer does a verified request's work and writes its response.
type providerAnswer func(w http.ResponseWriter, r *http.Request) error

// mountProviders adds the routes the providers call. They carry no API
// key: the provider's signature authenticates them, so they sit outside
// the authenticated /v1 subrouter, with the body limit of every route.
// The signature is checked first: verified requests are charged to their
// agent number's rate limit, failed ones to their client address's budget
// of failed signatures.
func (s *server) mountProviders(top *edge.Routes) {
	if s.providers == nil {
		return
	}
	top.Handle(http.MethodPost, "/v1/providers/telegram/{numberId}/webhook", s.providerRoute(s.telegramWebhook))
	top.Handle(http.MethodGet, "/v1/providers/whatsapp/{numberId}/webhook", s.providerRoute(s.whatsappVerify))
	top.Handle(http.MethodPost, "/v1/providers/whatsapp/{numberId}/webhook", s.providerRoute(s.whatsappWebhook))
}

// providerRoute applies the limits of the provider routes around verify,
// which checks the request's signature and returns what answers it.
func (s *server) providerRoute(verify func(r *http.Request, numberID string) (providerAnswer, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tmpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
			edge.NameRoute(r.Context(), tmpl)
		}
		attempt, done := s.limiters.ProviderFailures.Attempt(r.Context(), edge.ClientAddress(r))
		if !attempt.Admitted() {
			edge.WriteError(w, r, failure.RateLimited("too many failed webhook signatures from this address", attempt.RetryAfter))
			return
		}
		numberID := mux.Vars(r)["numberId"]
		if !ident.Valid(ident.Number, numberID) {
			done(false)
			edge.WriteError(w, r, failure.NotFound("number"))
			return
		}
		answer, err := verify(r, numberID)
		// Only failed signatures and tokens count against the client
		// address: a provider's own addresses also carry good traffic.
		done(err != nil && (failure.Is(err, failure.KindUnauthenticated) || failure.As(err).Code == "verification_failed"))
		if err != nil {
			edge.WriteError(w, r, err)
			return
		}
		// Only verified requests spend the number's budget: posts anyone
		// can forge must not crowd out the provider's.
		if quota := s.limiters.Accounts.Take(r.Context(), "provider:"+numberID); !quota.Admitted() {
			edge.WriteError(w, r, failure.RateLimited("rate limit exceeded for this agent number", quota.RetryAfter))
			return
		}
		if err := answer(w, r); err != nil {
			edge.WriteError(w, r, err)
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

func (s *server) telegramWebhook(r *http.Request, numberID string) (providerAnswer, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	post, err := s.providers.TelegramWebhook(r.Context(), numberID, r.Header.Get("X-Telegram-Bot-Api-Secret-Token"), body)
	if err != nil {
		return nil, err
	}
	return deliver(post), nil
}

func (s *server) whatsappVerify(r *http.Request, numberID string) (providerAnswer, error) {
	q := r.URL.Query()
	challenge, err := s.providers.WhatsAppVerify(r.Context(), numberID, q.Get("hub.mode"), q.Get("hub.verify_token"), q.Get("hub.challenge"))
	if err != nil {
		return nil, err
	}
	return func(w http.ResponseWriter, _ *http.Request) error {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, challenge)
		return nil
	}, nil
}

func (s *server) whatsappWebhook(r *http.Request, numberID string) (providerAnswer, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	post, err := s.providers.WhatsAppWebhook(r.Context(), numberID, r.Header.Get("X-Hub-Signature-256"), body)
	if err != nil {
		return nil, err
	}
	return deliver(post), nil
}

// deliver answers a verified post: stored, then 200.
func deliver(post VerifiedPost) providerAnswer {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := post.Deliver(r.Context()); err != nil {
			return err
		}
		edge.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}
}
