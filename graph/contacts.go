package graph

import (
	"context"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// ContactBook serves the contacts fields; *messaging.Service implements
// it. Without one they answer not_implemented.
type ContactBook interface {
	Contacts(ctx context.Context, accountID, search, cursor, field string, limit int) (appmessaging.ContactPage, error)
	Contact(ctx context.Context, accountID, id string) (appmessaging.ContactDetails, error)
	MergeContacts(ctx context.Context, accountID, id, other string) (appmessaging.ContactDetails, error)
}

var _ ContactBook = (*appmessaging.Service)(nil)

var errNoContacts = &failure.Error{Kind: failure.KindNotImplemented, Code: "contacts_unavailable", Message: "contacts are not configured"}

// contactConnection is a page of contacts; each edge's cursor pages on
// after it.
func contactConnection(page appmessaging.ContactPage) *model.ContactConnection {
	c := &model.ContactConnection{PageInfo: &model.PageInfo{HasNextPage: page.Next != ""}, Edges: []model.ContactEdge{}, Nodes: page.Contacts}
	if c.Nodes == nil {
		c.Nodes = []messaging.Contact{}
	}
	for i := range c.Nodes {
		c.Edges = append(c.Edges, model.ContactEdge{Cursor: appmessaging.ContactCursor(c.Nodes[i].ID), Node: &c.Nodes[i]})
	}
	if len(c.Edges) > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[len(c.Edges)-1].Cursor
	}
	return c
}
