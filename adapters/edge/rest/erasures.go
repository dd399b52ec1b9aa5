package rest

import (
	"context"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// ErasureUseCases is what the REST adapter needs to erase people.
type ErasureUseCases interface {
	Erase(ctx context.Context, req apperasure.Request) (erasure.Record, error)
	Records(ctx context.Context, accountID, cursor, field string, limit int) (apperasure.Page, error)
}

func (s *server) mountErasures(api *edge.Routes) {
	if s.erasure == nil {
		return
	}
	api.Handle(http.MethodPost, "/accounts/{accountId}/erasures", s.erase)
	api.Handle(http.MethodGet, "/accounts/{accountId}/erasures", s.erasures)
}

// eraseRequest names the person: exactly one of its fields.
type eraseRequest struct {
	ContactID *string `json:"contact_id"`
	Phone     *string `json:"phone"`
	UserID    *string `json:"user_id"`
	Email     *string `json:"email"`
}

// identifierFields are the request's fields with the kind each names.
var identifierFields = []struct {
	field string
	kind  erasure.Kind
	value func(eraseRequest) *string
}{
	{"contact_id", erasure.Contact, func(r eraseRequest) *string { return r.ContactID }},
	{"phone", erasure.Phone, func(r eraseRequest) *string { return r.Phone }},
	{"user_id", erasure.UserID, func(r eraseRequest) *string { return r.UserID }},
	{"email", erasure.Email, func(r eraseRequest) *string { return r.Email }},
}

// erasureBody is an erasure's audit record as the API shows it.
type erasureBody struct {
	ErasureID      string         `json:"erasure_id"`
	AccountID      string         `json:"account_id"`
	RequestedBy    string         `json:"requested_by"`
	IdentifierKind string         `json:"identifier_kind"`
	IdentifierHash string         `json:"identifier_hash"`
	Counts         map[string]int `json:"counts"`
	Total          int            `json:"total"`
	CreatedAt      string         `json:"created_at"`
}

func erasureOf(r erasure.Record) erasureBody {
	counts := r.Counts
	if counts == nil {
		counts = map[string]int{}
	}
	return erasureBody{ErasureID: r.ID, AccountID: r.AccountID, RequestedBy: r.RequestedBy, IdentifierKind: string(r.Kind),
		IdentifierHash: r.IdentifierHash, Counts: counts, Total: r.Total(), CreatedAt: timestamp(r.At)}
}

// RequestedBy is who an authenticated request acts as, for an erasure's
// record: "key:" and its credential id.
func RequestedBy(ctx context.Context) string {
	if p, ok := accounts.PrincipalFrom(ctx); ok {
		return "key:" + p.CredentialID
	}
	return "unknown"
}

func (s *server) erase(w http.ResponseWriter, r *http.Request) {
	var req eraseRequest
	if err := decodeJSON(r, &req); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var given []int
	for i, f := range identifierFields {
		if f.value(req) != nil {
			given = append(given, i)
		}
	}
	if len(given) != 1 {
		names := make([]string, len(identifierFields))
		for i, f := range identifierFields {
			names[i] = f.field
		}
		field := "contact_id"
		if len(given) > 1 {
			field = identifierFields[given[1]].field
		}
		edge.WriteError(w, r, failure.Invalid(failure.Field("missing", "give exactly one of "+join(names), field)))
		return
	}
	f := identifierFields[given[0]]
	rec, err := s.erasure.Erase(r.Context(), apperasure.Request{
		AccountID:   mux.Vars(r)["accountId"],
		ID:          erasure.Identifier{Kind: f.kind, Value: *f.value(req)},
		RequestedBy: RequestedBy(r.Context()),
		ValuePath:   []any{f.field},
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": erasureOf(rec)})
}

// join is names as "a, b, c or d".
func join(names []string) string {
	names = slices.Clone(names)
	if len(names) < 2 {
		return names[0]
	}
	out := ""
	for i, n := range names[:len(names)-1] {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out + " or " + names[len(names)-1]
}

// erasures lists the account's audit records, newest first, a page at a
// time: limit 1 to 100 (20 by default), cursor the next_cursor of the page
// before.
func (s *server) erasures(w http.ResponseWriter, r *http.Request) {
	limit, err := listLimit(r, apperasure.MaxPageSize)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	page, err := s.erasure.Records(r.Context(), mux.Vars(r)["accountId"], r.URL.Query().Get("cursor"), "cursor", limit)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeCursorPage(w, page.Records, erasureOf, page.Next)
}
