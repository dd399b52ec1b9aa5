package rest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

type accountResponse struct {
	Status string      `json:"status"`
	Data   accountBody `json:"data"`
}

type accountBody struct {
	AccountID          string `json:"account_id"`
	Name               string `json:"name"`
	CreatedAt          string `json:"created_at"`
	UpdatedAt          string `json:"updated_at"`
	ServiceEmailDomain string `json:"service_email_domain"`
	// HistoryRetentionDays is how long the account's history is kept, in
	// days; HistoryRetentionSource says whose period it is.
	HistoryRetentionDays   float64 `json:"history_retention_days"`
	HistoryRetentionSource string  `json:"history_retention_source"`
	// MessageRetentionDays is how long the account's messages and
	// emails are kept, in days; null keeps them.
	MessageRetentionDays *int               `json:"message_retention_days"`
	Numbers              []numberBody       `json:"numbers"`
	EmailAddresses       []emailAddressBody `json:"email_addresses"`
	Domains              []domainBody       `json:"domains"`
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
		ServiceEmailDomain:     s.emailDomain,
		HistoryRetentionDays:   float64(s.accounts.HistoryRetention(o.Account)) / float64(account.Day),
		HistoryRetentionSource: retentionSource(o.Account),
		MessageRetentionDays:   messageRetentionDays(o.Account),
		Numbers:                make([]numberBody, len(o.Numbers)),
		EmailAddresses:         make([]emailAddressBody, len(o.EmailAddresses)),
		Domains:                make([]domainBody, len(o.Domains)),
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
	// HistoryRetentionDays is a number of days, or null for the server's
	// period; absent leaves it.
	HistoryRetentionDays json.RawMessage `json:"history_retention_days"`
	// MessageRetentionDays is a number of days, or null to keep messages;
	// absent leaves it.
	MessageRetentionDays json.RawMessage `json:"message_retention_days"`
}

// messageRetentionDays is the account's message retention, nil when off.
func messageRetentionDays(a account.Account) *int {
	if a.MessageRetentionDays > 0 {
		return &a.MessageRetentionDays
	}
	return nil
}

// retentionDays reads a retention field: a whole number of days checked
// by check, or null (nil); refuse collects a problem.
func retentionDays(raw json.RawMessage, field, null string, check func(int, ...any) error, refuse func(error)) *int {
	if isNull(raw) {
		return nil
	}
	days := new(int)
	if err := json.Unmarshal(raw, days); err != nil {
		refuse(failure.Invalid(failure.Field("int_type", field+" must be a whole number of days, or null "+null, field)))
	} else {
		refuse(check(*days, field))
	}
	return days
}

// retentionSource says whose history retention an account follows.
func retentionSource(a account.Account) string {
	if a.HistoryRetentionDays > 0 {
		return "account"
	}
	return "server"
}

func (s *server) patchAccount(w http.ResponseWriter, r *http.Request) {
	var req patchAccountRequest
	if err := decodeJSON(r, &req); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	// Every problem of the body is answered at once, before anything is
	// saved.
	var fields []failure.FieldError
	refuse := func(err error) {
		if err != nil {
			fields = append(fields, failure.As(err).Fields...)
		}
	}
	if req.Name == nil && req.HistoryRetentionDays == nil && req.MessageRetentionDays == nil {
		refuse(failure.Invalid(failure.Field("missing", "give name, history_retention_days, message_retention_days or several", "name")))
	}
	if req.Name != nil {
		refuse(account.CheckName(*req.Name))
	}
	days := retentionDays(req.HistoryRetentionDays, accounts.HistoryRetentionField, "for the server's period", account.CheckHistoryRetentionDays, refuse)
	messageDays := retentionDays(req.MessageRetentionDays, accounts.MessageRetentionField, "to keep messages", account.CheckMessageRetentionDays, refuse)
	if len(fields) > 0 {
		edge.WriteError(w, r, failure.Invalid(fields...))
		return
	}
	id := mux.Vars(r)["accountId"]
	if req.Name != nil {
		if _, err := s.accounts.Rename(r.Context(), id, *req.Name); err != nil {
			edge.WriteError(w, r, err)
			return
		}
	}
	if req.HistoryRetentionDays != nil {
		if _, err := s.accounts.SetHistoryRetention(r.Context(), id, days, accounts.HistoryRetentionField); err != nil {
			edge.WriteError(w, r, err)
			return
		}
	}
	if req.MessageRetentionDays != nil {
		if _, err := s.accounts.SetMessageRetention(r.Context(), id, messageDays, accounts.MessageRetentionField); err != nil {
			edge.WriteError(w, r, err)
			return
		}
	}
	o, err := s.accounts.Overview(r.Context(), id)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, s.accountResponse(o))
}
