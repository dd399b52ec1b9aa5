package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// The contact tools' names.
const (
	listContactsToolName = "list_contacts"
	getContactToolName   = "get_contact"
)

// Contacts is what the contact tools need of the messaging use cases;
// *messaging.Service implements it.
type Contacts interface {
	Contacts(ctx context.Context, accountID, search, cursor, field string, limit int) (appmessaging.ContactPage, error)
	Contact(ctx context.Context, accountID, id string) (appmessaging.ContactDetails, error)
}

var _ Contacts = (*appmessaging.Service)(nil)

func (h *Handler) addContactTools() error {
	contacts, ok := h.deps.Messaging.(Contacts)
	if !ok {
		return nil
	}
	if err := addTool[listContactsArgs, contactList](h, &sdk.Tool{
		Name:  listContactsToolName,
		Title: "List contacts",
		Description: "List the account's contacts, newest first: one contact per person, with their phone numbers, WhatsApp user id and username, " +
			"Telegram user id and username. search keeps those whose name, numbers, ids or usernames contain the text. " +
			"Page with limit and cursor (the next_cursor of the previous page).",
		Annotations: readOnly,
	}, func(ctx context.Context, accountID string, in listContactsArgs) (any, error) {
		page, err := contacts.Contacts(ctx, accountID, in.Search, in.Cursor, "cursor", in.Limit)
		if err != nil {
			return nil, err
		}
		out := contactList{Contacts: make([]contactItem, len(page.Contacts)), NextCursor: page.Next}
		for i, c := range page.Contacts {
			out.Contacts[i] = contactItemOf(c)
		}
		return out, nil
	}, between(1, appmessaging.MaxListLimit, "limit"), byDefault(appmessaging.DefaultListLimit, "limit")); err != nil {
		return err
	}
	return addTool[getContactArgs, contactItem](h, &sdk.Tool{
		Name:        getContactToolName,
		Title:       "Read a contact",
		Description: "Read a contact (con_…) with its threads: every conversation the person has with the account's agent numbers, on any channel.",
		Annotations: readOnly,
	}, func(ctx context.Context, accountID string, in getContactArgs) (any, error) {
		d, err := contacts.Contact(ctx, accountID, in.ContactID)
		if err != nil {
			return nil, err
		}
		item := contactItemOf(d.Contact)
		item.Threads = []contactThread{}
		for _, t := range d.Threads {
			item.Threads = append(item.Threads, contactThread{ThreadID: t.ID, Service: string(t.Service), AgentNumber: t.AgentNumber, Contact: t.Contact, Name: t.Name})
		}
		return item, nil
	})
}

// listContactsArgs are list_contacts' arguments.
type listContactsArgs struct {
	Search string `json:"search,omitempty" jsonschema:"text the name, a phone number, a user id or a username contains"`
	Limit  int    `json:"limit,omitempty" jsonschema:"contacts per page, 1 to 100"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// contactList is list_contacts' answer.
type contactList struct {
	Contacts   []contactItem `json:"contacts" jsonschema:"newest first"`
	NextCursor string        `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last"`
}

// getContactArgs are get_contact's arguments.
type getContactArgs struct {
	ContactID string `json:"contact_id" jsonschema:"the contact (con_…), from list_contacts or a message"`
}

// contactItem is a contact as the tools show it.
type contactItem struct {
	ContactID        string          `json:"contact_id"`
	Name             string          `json:"name"`
	Phones           []string        `json:"phones"`
	WhatsAppUserID   string          `json:"whatsapp_user_id,omitempty" jsonschema:"the WhatsApp business-scoped user id"`
	WhatsAppUsername string          `json:"whatsapp_username,omitempty"`
	TelegramUserID   string          `json:"telegram_user_id,omitempty"`
	TelegramUsername string          `json:"telegram_username,omitempty"`
	CreatedAt        string          `json:"created_at"`
	Threads          []contactThread `json:"threads,omitempty" jsonschema:"get_contact: the person's threads, most recently active first"`
}

// contactThread is a thread of a contact.
type contactThread struct {
	ThreadID    string `json:"thread_id"`
	Service     string `json:"service"`
	AgentNumber string `json:"agent_number"`
	Contact     string `json:"contact" jsonschema:"the user's address in the thread"`
	Name        string `json:"name"`
}

func contactItemOf(c messaging.Contact) contactItem {
	phones := c.Phones
	if phones == nil {
		phones = []string{}
	}
	return contactItem{ContactID: c.ID, Name: c.Name, Phones: phones, WhatsAppUserID: c.WhatsAppUserID, WhatsAppUsername: c.WhatsAppUsername,
		TelegramUserID: c.TelegramUserID, TelegramUsername: c.TelegramUsername, CreatedAt: timestamp(c.CreatedAt)}
}
