package rest

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

type accountResponse struct {
	Status string      `json:"status"`
	Data   accountBody `json:"data"`
}

type accountBody struct {
	AccountID          string             `json:"account_id"`
	Name               string             `json:"name"`
	CreatedAt          string             `json:"created_at"`
	UpdatedAt          string             `json:"updated_at"`
	ServiceEmailDomain string             `json:"service_email_domain"`
	Numbers            []numberBody       `json:"numbers"`
	EmailAddresses     []emailAddressBody `json:"email_addresses"`
	Domains            []domainBody       `json:"domains"`
}

type numberBody struct {
	NumberID  string `json:"number_id"`
	Number    string `json:"number"`
	Service   string `json:"service"`
	Provider  string `json:"provider"`
	Enabled   bool   `json:"enabled"`
	CreatedAt string `json:"created_at"`
	// Profile is the display name and picture, as the account last set
	// them.
	Profile numberProfileBody `json:"profile"`
}

type emailAddressBody struct {
	EmailID   string `json:"email_id"`
	Address   string `json:"address"`
	CreatedAt string `json:"created_at"`
}

type domainBody struct {
	DomainID  string `json:"domain_id"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
}

// timestamp formats times the way every response does: RFC 3339, UTC.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *server) accountResponse(o accounts.Overview) accountResponse {
	body := accountBody{
		AccountID: o.Account.ID, Name: o.Account.Name,
		CreatedAt: timestamp(o.Account.CreatedAt), UpdatedAt: timestamp(o.Account.UpdatedAt),
		ServiceEmailDomain: s.emailDomain,
		Numbers:            make([]numberBody, len(o.Numbers)),
		EmailAddresses:     make([]emailAddressBody, len(o.EmailAddresses)),
		Domains:            make([]domainBody, len(o.Domains)),
	}
	for i, n := range o.Numbers {
		body.Numbers[i] = numberBody{NumberID: n.ID, Number: n.Number, Service: string(n.Service),
			Provider: string(n.Provider), Enabled: n.Enabled, CreatedAt: timestamp(n.CreatedAt), Profile: numberProfile(n.Profile)}
	}
	for i, e := range o.EmailAddresses {
		body.EmailAddresses[i] = emailAddressBody{EmailID: e.ID, Address: e.Address(), CreatedAt: timestamp(e.CreatedAt)}
	}
	for i, d := range o.Domains {
		body.Domains[i] = domainBody{DomainID: d.ID, Name: d.Name, CreatedAt: timestamp(d.CreatedAt)}
	}
	return accountResponse{Status: "success", Data: body}
}

func (s *server) getAccount(w http.ResponseWriter, r *http.Request) {
	o, err := s.accounts.Overview(r.Context(), mux.Vars(r)["accountId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, s.accountResponse(o))
}

type patchAccountRequest struct {
	Name *string `json:"name"`
}

func (s *server) patchAccount(w http.ResponseWriter, r *http.Request) {
	var req patchAccountRequest
	if err := decodeJSON(r, &req); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, req.Name, "name")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	id := mux.Vars(r)["accountId"]
	if _, err := s.accounts.Rename(r.Context(), id, *req.Name); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	o, err := s.accounts.Overview(r.Context(), id)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, s.accountResponse(o))
}
