package graph

import (
	"context"
	"slices"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// ErasureUseCases erases people; *erasure.Service implements it. Without
// one, erasePerson answers not_implemented.
type ErasureUseCases interface {
	Erase(ctx context.Context, req apperasure.Request) (erasure.Record, error)
	Records(ctx context.Context, accountID, cursor, field string, limit int) (apperasure.Page, error)
}

var errNoErasure = &failure.Error{Kind: failure.KindNotImplemented, Code: "erasure_unavailable", Message: "the erasure of people is not configured"}

// erasureIdentifier is the one identifier of erasePerson's arguments and
// the argument's name; Invalid unless exactly one is given.
func erasureIdentifier(contactID, phone, userID, email *string) (erasure.Identifier, string, error) {
	var id erasure.Identifier
	var field string
	given := 0
	for _, a := range []struct {
		name  string
		kind  erasure.Kind
		value *string
	}{{"contactId", erasure.Contact, contactID}, {"phone", erasure.Phone, phone}, {"userId", erasure.UserID, userID}, {"email", erasure.Email, email}} {
		if a.value != nil {
			given++
			if given == 1 {
				id, field = erasure.Identifier{Kind: a.kind, Value: *a.value}, a.name
			} else {
				field = a.name
			}
		}
	}
	if given != 1 {
		if field == "" {
			field = "contactId"
		}
		return id, field, failure.Invalid(failure.Field("missing", "give exactly one of contactId, phone, userId or email", field))
	}
	return id, field, nil
}

// erasureModel is an erasure's record as the schema shows it, its counts
// by table name.
func erasureModel(r erasure.Record) *model.Erasure {
	out := &model.Erasure{ID: r.ID, RequestedBy: r.RequestedBy, IdentifierKind: string(r.Kind), IdentifierHash: r.IdentifierHash,
		Counts: []model.ErasureCount{}, Total: r.Total(), CreatedAt: r.At}
	for table, n := range r.Counts {
		out.Counts = append(out.Counts, model.ErasureCount{Table: table, Rows: n})
	}
	slices.SortFunc(out.Counts, func(a, b model.ErasureCount) int {
		if a.Table < b.Table {
			return -1
		}
		if a.Table > b.Table {
			return 1
		}
		return 0
	})
	return out
}

// erasureConnection is a page of erasure records; each edge's cursor pages
// on after it.
func erasureConnection(page apperasure.Page) *model.ErasureConnection {
	c := &model.ErasureConnection{PageInfo: &model.PageInfo{HasNextPage: page.Next != ""}, Edges: []model.ErasureEdge{}, Nodes: []model.Erasure{}}
	for _, rec := range page.Records {
		c.Nodes = append(c.Nodes, *erasureModel(rec))
	}
	for i := range c.Nodes {
		c.Edges = append(c.Edges, model.ErasureEdge{Cursor: apperasure.Cursor(page.Records[i]), Node: &c.Nodes[i]})
	}
	if len(c.Edges) > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[len(c.Edges)-1].Cursor
	}
	return c
}
