package graph

import (
	"context"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// threadConnection builds a page of threads and tells the response's
// loaders that these threads were listed together.
func threadConnection(ctx context.Context, page []appmessaging.PagedThread, more bool) *model.ThreadConnection {
	c := &model.ThreadConnection{
		Edges: make([]model.ThreadEdge, len(page)), Nodes: make([]messaging.Thread, len(page)),
		PageInfo: &model.PageInfo{HasNextPage: more},
	}
	for i, p := range page {
		t := p.Thread
		c.Nodes[i] = t
		c.Edges[i] = model.ThreadEdge{Cursor: encodeCursor("t", p.Cursor.Activity, p.Cursor.ID), Node: &t}
	}
	if n := len(c.Edges); n > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[n-1].Cursor
	}
	if l, err := loadersFor(ctx); err == nil {
		l.listed(ctx, c.Nodes)
	}
	return c
}

// messagePage loads one page of a thread's messages through the
// response's loaders, so that the pages of threads listed together are
// read together: the first page, or the one after the message cursor
// names (a token of this thread's, given in the argument field).
func messagePage(ctx context.Context, threadID string, first *int, cursor *string, field string) (appmessaging.MessagePage, error) {
	l, err := loadersFor(ctx)
	if err != nil {
		return appmessaging.MessagePage{}, err
	}
	key := pageKey{threadID: threadID, first: appmessaging.ClampPage(intOr(first, appmessaging.DefaultPageSize))}
	if cursor != nil {
		before, err := appmessaging.ParseMessageCursor(threadID, *cursor, field)
		if err != nil {
			return appmessaging.MessagePage{}, err
		}
		key.before, key.hasCur = before, true
	}
	return l.messages.Load(ctx, key)()
}

// messageConnection builds a page of messages, newest first; an edge's
// cursor is the message's position token, the same REST get-messages
// pages with.
func messageConnection(page appmessaging.MessagePage) *model.MessageConnection {
	c := &model.MessageConnection{
		Edges: make([]model.MessageEdge, len(page.Messages)), Nodes: page.Messages,
		PageInfo: &model.PageInfo{HasNextPage: page.HasMore},
	}
	if c.Nodes == nil {
		c.Nodes = []messaging.Message{}
	}
	for i := range page.Messages {
		m := page.Messages[i]
		c.Edges[i] = model.MessageEdge{Cursor: appmessaging.MessageCursorOf(m).Token(m.ThreadID), Node: &m}
	}
	if n := len(c.Edges); n > 0 {
		c.PageInfo.StartCursor, c.PageInfo.EndCursor = &c.Edges[0].Cursor, &c.Edges[n-1].Cursor
	}
	return c
}

// sendContent reads the content of a send: text or media, exactly one.
func sendContent(in model.SendMessageInput) (messaging.Content, messaging.Fields, error) {
	switch {
	case in.Text != nil && in.Media != nil:
		return messaging.Content{}, messaging.Fields{}, failure.Invalid(failure.Field("value_error", "give either text or media, not both", "media"))
	case in.Text != nil:
		return messaging.Content{Kind: messaging.KindText, Text: *in.Text, Buttons: in.Buttons}, messaging.Fields{Text: "text"}, nil
	case in.Media != nil:
		fields := messaging.Fields{Base: []any{"media"}, MediaURL: "url"}
		if !in.Media.Kind.IsMedia() {
			return messaging.Content{}, messaging.Fields{}, failure.Invalid(failure.Field("enum", "media.kind must be one of IMAGE, VIDEO, AUDIO, DOCUMENT", "media", "kind"))
		}
		c := messaging.Content{Kind: in.Media.Kind, MediaURL: in.Media.URL, Buttons: in.Buttons}
		if in.Media.Caption != nil {
			c.Caption = *in.Media.Caption
		}
		return c, fields, nil
	}
	return messaging.Content{}, messaging.Fields{}, failure.Invalid(failure.Field("missing", "give text or media", "text"))
}

func serviceName(s *account.Service) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
