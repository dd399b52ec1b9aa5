package rest

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// The contacts routes: list, get (with threads), rename, merge.
func (s *server) mountContacts(api *edge.Routes) {
	api.Handle(http.MethodGet, "/contacts/{accountId}", s.contactList)
	api.Handle(http.MethodGet, "/contacts/{accountId}/{contactId}", s.contactDetails)
	api.Handle(http.MethodPatch, "/contacts/{accountId}/{contactId}", s.idempotent(s.renameContact))
	api.Handle(http.MethodPost, "/contacts/{accountId}/{contactId}/merge", s.idempotent(s.mergeContacts))
}

// contactBody is a contact as the API shows it.
type contactBody struct {
	ContactID        string   `json:"contact_id"`
	Name             string   `json:"name"`
	Phones           []string `json:"phones"`
	WhatsAppUserID   string   `json:"whatsapp_user_id,omitempty"`
	WhatsAppUsername string   `json:"whatsapp_username,omitempty"`
	TelegramUserID   string   `json:"telegram_user_id,omitempty"`
	TelegramUsername string   `json:"telegram_username,omitempty"`
	CreatedAt        string   `json:"created_at"`
	UpdatedAt        string   `json:"updated_at"`
	// Threads are set on a single contact's answer.
	Threads []contactThreadBody `json:"threads,omitempty"`
}

// contactThreadBody is a thread of a contact.
type contactThreadBody struct {
	ThreadID    string `json:"thread_id"`
	Service     string `json:"service"`
	AgentNumber string `json:"agent_number"`
	Contact     string `json:"contact"`
	Name        string `json:"name"`
}

func contactOf(c domain.Contact) contactBody {
	phones := c.Phones
	if phones == nil {
		phones = []string{}
	}
	return contactBody{ContactID: c.ID, Name: c.Name, Phones: phones, WhatsAppUserID: c.WhatsAppUserID, WhatsAppUsername: c.WhatsAppUsername,
		TelegramUserID: c.TelegramUserID, TelegramUsername: c.TelegramUsername, CreatedAt: timestamp(c.CreatedAt), UpdatedAt: timestamp(c.UpdatedAt)}
}

func contactDetailsOf(d messaging.ContactDetails) contactBody {
	b := contactOf(d.Contact)
	b.Threads = []contactThreadBody{}
	for _, t := range d.Threads {
		b.Threads = append(b.Threads, contactThreadBody{ThreadID: t.ID, Service: string(t.Service), AgentNumber: t.AgentNumber, Contact: t.Contact, Name: t.Name})
	}
	return b
}

func (s *server) contactList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := listLimit(r, messaging.MaxListLimit)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	page, err := s.messaging.Contacts(r.Context(), mux.Vars(r)["accountId"], q.Get("search"), q.Get("cursor"), "cursor", limit)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeCursorPage(w, page.Contacts, contactOf, page.Next)
}

func (s *server) contactDetails(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	d, err := s.messaging.Contact(r.Context(), vars["accountId"], vars["contactId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": contactDetailsOf(d)})
}

// renameContactBody is the PATCH body: the new display name.
type renameContactBody struct {
	Name *string `json:"name"`
}

func (s *server) renameContact(w http.ResponseWriter, r *http.Request) {
	var b renameContactBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Name, "name")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	d, err := s.messaging.RenameContact(r.Context(), vars["accountId"], vars["contactId"], *b.Name)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": contactDetailsOf(d)})
}

// mergeContactsBody names the contact merged into the path's.
type mergeContactsBody struct {
	OtherContactID *string `json:"other_contact_id"`
}

func (s *server) mergeContacts(w http.ResponseWriter, r *http.Request) {
	var b mergeContactsBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.OtherContactID, "other_contact_id")
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	d, err := s.messaging.MergeContacts(r.Context(), vars["accountId"], vars["contactId"], *b.OtherContactID)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": contactDetailsOf(d)})
}
