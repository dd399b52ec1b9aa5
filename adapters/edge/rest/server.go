// Package rest is the REST handler set of the HTTP edge: the /v1 routes,
// their DTOs and the providers' callbacks, mounted on the edge's host
// (adapters/edge), which authenticates, limits and answers failures.
package rest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// OpenAPIYAML is the REST contract. Every route is described there, and the
// tests validate every response they receive against it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// AccountUseCases is what the REST adapter needs from the account use cases.
type AccountUseCases interface {
	Overview(ctx context.Context, accountID string) (accounts.Overview, error)
	Rename(ctx context.Context, accountID, name string) (account.Account, error)
	SetHistoryRetention(ctx context.Context, accountID string, days *int, field ...any) (account.Account, error)
	SetMessageRetention(ctx context.Context, accountID string, days *int, field ...any) (account.Account, error)
	HistoryRetention(a account.Account) time.Duration
}

// Deps is what the REST handler set is built from.
type Deps struct {
	Accounts AccountUseCases
	// Messaging serves the send, lookup and sandbox routes when set.
	Messaging MessagingUseCases
	// Email serves the email routes when set.
	Email EmailUseCases
	// Cron serves the /cron-jobs routes, the interface's and A1Cron's,
	// when set.
	Cron CronUseCases
	// CronTrigger, when set, serves A1Cron's trigger route.
	CronTrigger CronTrigger
	// Webhooks serves the webhook settings, delivery log and polling
	// routes when set.
	Webhooks WebhookUseCases
	// Providers, when set, serves the inbound routes the messaging
	// providers call (Telegram and WhatsApp webhooks).
	Providers ProviderWebhooks
	// Profiles, when set, serves the profile-settings routes.
	Profiles ProfileUseCases
	// Erasure, when set, serves the erasure of people.
	Erasure ErasureUseCases
	// EmailDomain is the service's own email domain, shown on accounts.
	EmailDomain string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

type server struct {
	accounts    AccountUseCases
	messaging   MessagingUseCases
	providers   ProviderWebhooks
	email       EmailUseCases
	inbox       InboxUseCases
	cron        CronUseCases
	cronTrigger CronTrigger
	webhooks    WebhookUseCases
	profiles    ProfileUseCases
	erasure     ErasureUseCases
	idempotency *edge.Idempotency
	limiters    edge.Limiters
	now         func() time.Time
	emailDomain string
}

// Mount adds the REST routes to host: the OpenAPI document, the /v1 API
// and the providers' callbacks.
func Mount(host *edge.Host, d Deps) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	s := &server{
		accounts: d.Accounts, messaging: d.Messaging, providers: d.Providers, email: d.Email, cron: d.Cron, cronTrigger: d.CronTrigger,
		webhooks: d.Webhooks, profiles: d.Profiles, idempotency: host.Idempotency(), limiters: host.Limiters(), now: now,
		emailDomain: d.EmailDomain, erasure: d.Erasure,
	}
	top := host.Public()
	top.Handle(http.MethodGet, "/v1/openapi.json", s.openapi)
	// The API's routes, sends first: mux tries routes in turn.
	api := host.API()
	s.mountMessaging(api)
	s.mountEmail(api)
	api.Handle(http.MethodGet, "/accounts/{accountId}", s.getAccount)
	api.Handle(http.MethodPatch, "/accounts/{accountId}", s.patchAccount)
	s.mountCron(host.APIWithBearerKey())
	s.mountA1Cron(api)
	s.mountWebhooks(api)
	s.mountProfiles(api)
	s.mountErasures(api)
	s.mountProviders(top)
	if s.messaging != nil {
		s.mountMedia(api, top)
	}
}

// NewHandler serves the REST routes alone on a host of their own, built
// from host; tests use it.
func NewHandler(host edge.Deps, d Deps) (http.Handler, error) {
	h, err := edge.New(host)
	if err != nil {
		return nil, err
	}
	Mount(h, d)
	return h.Handler(), nil
}

// openAPIJSON is the embedded document as JSON, made on the first request
// for it: loading it costs a process more than the rest of its start.
// (Tests check the document itself.)
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	return json.Marshal(doc)
})

func (s *server) openapi(w http.ResponseWriter, r *http.Request) {
	edge.NameRoute(r.Context(), "/v1/openapi.json")
	doc, err := openAPIJSON()
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(doc)
}
