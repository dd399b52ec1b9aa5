package graphql_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

const threadsQuery = `query($first: Int, $after: String, $filter: ThreadFilter) {
  threads(first: $first, after: $after, filter: $filter) {
    edges { cursor node { id type service agentNumber contact
      participants { address isAgent }
      messages(first: 2) { nodes { id text: content { text } direction status from } pageInfo { hasNextPage endCursor } }
    } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`

type threadsData struct {
	Threads struct {
		Edges []struct {
			Cursor string `json:"cursor"`
			Node   struct {
				ID           string  `json:"id"`
				Type         string  `json:"type"`
				Service      string  `json:"service"`
				AgentNumber  string  `json:"agentNumber"`
				Contact      *string `json:"contact"`
				Participants []struct {
					Address string `json:"address"`
					IsAgent bool   `json:"isAgent"`
				} `json:"participants"`
				Messages struct {
					Nodes []struct {
						ID        string            `json:"id"`
						Text      map[string]string `json:"text"`
						Direction string            `json:"direction"`
						Status    string            `json:"status"`
						From      string            `json:"from"`
					} `json:"nodes"`
					PageInfo pageInfo `json:"pageInfo"`
				} `json:"messages"`
			} `json:"node"`
		} `json:"edges"`
		PageInfo pageInfo `json:"pageInfo"`
	} `json:"threads"`
}

type pageInfo struct {
	HasNextPage     bool    `json:"hasNextPage"`
	HasPreviousPage bool    `json:"hasPreviousPage"`
	StartCursor     *string `json:"startCursor"`
	EndCursor       *string `json:"endCursor"`
}

func TestThreadsAndMessages(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		_, tA := b.inbound(t, b.acme, userA, agentA, "first from A")
		m2, _ := b.inbound(t, b.acme, userA, agentA, "second from A")
		m3, tB := b.inbound(t, b.acme, userB, agentA, "from B")
		b.inbound(t, b.other, userA, agentOther, "to the other account")

		t.Run("PagesNewestFirst", func(t *testing.T) {
			var page1 threadsData
			b.data(t, b.acme, threadsQuery, map[string]any{"first": 1}, &page1)
			require.Len(t, page1.Threads.Edges, 1)
			n := page1.Threads.Edges[0].Node
			require.Equal(t, tB, n.ID, "the thread with the newest message comes first")
			require.Equal(t, "INDIVIDUAL", n.Type)
			require.Equal(t, "WHATSAPP", n.Service)
			require.Equal(t, userB, *n.Contact)
			require.Len(t, n.Participants, 2)
			require.True(t, n.Participants[0].IsAgent)
			require.Equal(t, agentA, n.Participants[0].Address)
			require.Len(t, n.Messages.Nodes, 1)
			require.Equal(t, m3, n.Messages.Nodes[0].ID)
			require.Equal(t, "INBOUND", n.Messages.Nodes[0].Direction)
			require.Equal(t, "RECEIVED", n.Messages.Nodes[0].Status)
			require.True(t, page1.Threads.PageInfo.HasNextPage)
			require.False(t, page1.Threads.PageInfo.HasPreviousPage)

			var page2 threadsData
			b.data(t, b.acme, threadsQuery, map[string]any{"first": 1, "after": *page1.Threads.PageInfo.EndCursor}, &page2)
			require.Len(t, page2.Threads.Edges, 1)
			n = page2.Threads.Edges[0].Node
			require.Equal(t, tA, n.ID)
			require.Len(t, n.Messages.Nodes, 2)
			require.Equal(t, m2, n.Messages.Nodes[0].ID, "messages come newest first")
			require.Equal(t, "second from A", n.Messages.Nodes[0].Text["text"])
			require.False(t, n.Messages.PageInfo.HasNextPage)
			require.False(t, page2.Threads.PageInfo.HasNextPage)
		})

		t.Run("MessagesPageWithCursor", func(t *testing.T) {
			var d struct {
				Thread struct {
					Messages struct {
						Nodes []struct {
							ID string `json:"id"`
						} `json:"nodes"`
						PageInfo pageInfo `json:"pageInfo"`
					} `json:"messages"`
				} `json:"thread"`
			}
			q := `query($id: ID!, $after: String) { thread(id: $id) { messages(first: 1, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } } }`
			b.data(t, b.acme, q, map[string]any{"id": tA}, &d)
			require.Len(t, d.Thread.Messages.Nodes, 1)
			require.True(t, d.Thread.Messages.PageInfo.HasNextPage)
			first := d.Thread.Messages.Nodes[0].ID
			b.data(t, b.acme, q, map[string]any{"id": tA, "after": *d.Thread.Messages.PageInfo.EndCursor}, &d)
			require.Len(t, d.Thread.Messages.Nodes, 1)
			require.NotEqual(t, first, d.Thread.Messages.Nodes[0].ID)
			require.False(t, d.Thread.Messages.PageInfo.HasNextPage)
		})

		t.Run("Filters", func(t *testing.T) {
			var d threadsData
			b.data(t, b.acme, threadsQuery, map[string]any{"filter": map[string]any{"phoneNumber": userA}}, &d)
			require.Len(t, d.Threads.Edges, 1)
			require.Equal(t, tA, d.Threads.Edges[0].Node.ID)
			b.data(t, b.acme, threadsQuery, map[string]any{"filter": map[string]any{"service": "TELEGRAM"}}, &d)
			require.Empty(t, d.Threads.Edges)
			b.data(t, b.acme, threadsQuery, map[string]any{"filter": map[string]any{"service": "WHATSAPP", "type": "INDIVIDUAL"}}, &d)
			require.Len(t, d.Threads.Edges, 2)
			b.data(t, b.acme, threadsQuery, map[string]any{"filter": map[string]any{"type": "GROUP"}}, &d)
			require.Empty(t, d.Threads.Edges)
		})

		t.Run("MessageByID", func(t *testing.T) {
			var d struct {
				Message struct {
					ID     string `json:"id"`
					Thread struct {
						ID string `json:"id"`
					} `json:"thread"`
				} `json:"message"`
			}
			b.data(t, b.acme, `query($id: ID!) { message(id: $id) { id thread { id } } }`, map[string]any{"id": m2}, &d)
			require.Equal(t, m2, d.Message.ID)
			require.Equal(t, tA, d.Message.Thread.ID)
		})

		t.Run("BadCursorIsAValidationError", func(t *testing.T) {
			resp := b.query(t, b.acme, `{ threads(after: "bm9wZQ") { pageInfo { hasNextPage } } }`, nil)
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
		})

		t.Run("WithoutCredentialsIs401", func(t *testing.T) {
			status, _ := b.queryStatus(t, http.Header{}, `{ account { id } }`, nil)
			require.Equal(t, http.StatusUnauthorized, status)
		})
	})
}

// Another account's ids read as absent: null, never data.
func TestOtherAccountsIDsAreNotFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		msg, thread := b.inbound(t, b.acme, userA, agentA, "secret")

		resp := b.query(t, b.other, `query($t: ID!, $m: ID!) {
			thread(id: $t) { id name participants { address } messages { nodes { id } } }
			message(id: $m) { id content { text } thread { id } }
		}`, map[string]any{"t": thread, "m": msg})
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"thread": null, "message": null}`, string(resp.Data))

		var d threadsData
		b.data(t, b.other, threadsQuery, nil, &d)
		for _, e := range d.Threads.Edges {
			require.NotEqual(t, thread, e.Node.ID)
		}

		// Sending into another account's group thread id is not found,
		// like any unknown thread.
		resp = b.query(t, b.other, `mutation($t: ID!) { sendMessage(input: {from: "`+agentOther+`", threadId: $t, text: "hi"}) { id } }`, map[string]any{"t": thread})
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "not_found", resp.Errors[0].Extensions["code"])
	})
}

func TestSendMessage(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		_, thread := b.inbound(t, b.acme, userA, agentA, "hello")
		send := `mutation($in: SendMessageInput!) { sendMessage(input: $in) { id threadId status direction from to content { kind text mediaUrl caption } } }`

		t.Run("Text", func(t *testing.T) {
			var d struct {
				SendMessage struct {
					ID        string            `json:"id"`
					ThreadID  string            `json:"threadId"`
					Status    string            `json:"status"`
					Direction string            `json:"direction"`
					Content   map[string]string `json:"content"`
				} `json:"sendMessage"`
			}
			b.data(t, b.acme, send, map[string]any{"in": map[string]any{"service": "WHATSAPP", "from": agentA, "to": userA, "text": "hi there"}}, &d)
			require.Equal(t, thread, d.SendMessage.ThreadID)
			require.Equal(t, "QUEUED", d.SendMessage.Status)
			require.Equal(t, "OUTBOUND_API", d.SendMessage.Direction)
			require.Equal(t, "TEXT", d.SendMessage.Content["kind"])
			// The job runner delivers it through the sandbox.
			eventually(t, func() bool {
				var m struct {
					Message struct {
						Status string `json:"status"`
					} `json:"message"`
				}
				b.data(t, b.acme, `query($id: ID!) { message(id: $id) { status } }`, map[string]any{"id": d.SendMessage.ID}, &m)
				return m.Message.Status == "SENT" || m.Message.Status == "DELIVERED"
			}, "the message is delivered")
		})

		t.Run("Media", func(t *testing.T) {
			media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "image/png")
				_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n"))
			}))
			t.Cleanup(media.Close)
			var d struct {
				SendMessage struct {
					Content map[string]string `json:"content"`
				} `json:"sendMessage"`
			}
			b.data(t, b.acme, send, map[string]any{"in": map[string]any{
				"service": "WHATSAPP", "from": agentA, "to": userA,
				"media": map[string]any{"kind": "IMAGE", "url": media.URL + "/cat.png", "caption": "a cat"},
			}}, &d)
			require.Equal(t, map[string]string{"kind": "IMAGE", "text": "", "mediaUrl": media.URL + "/cat.png", "caption": "a cat"}, d.SendMessage.Content)
		})

		t.Run("ValidationErrorsNameTheFields", func(t *testing.T) {
			resp := b.query(t, b.acme, send, map[string]any{"in": map[string]any{"service": "WHATSAPP", "from": "nope", "to": userA, "text": ""}})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
			fields, _ := resp.Errors[0].Extensions["fields"].([]any)
			var paths []any
			for _, f := range fields {
				paths = append(paths, f.(map[string]any)["path"])
			}
			require.ElementsMatch(t, []any{[]any{"from"}, []any{"text"}}, paths)
		})

		t.Run("PreconditionKeepsItsCode", func(t *testing.T) {
			resp := b.query(t, b.acme, send, map[string]any{"in": map[string]any{"service": "WHATSAPP", "from": agentA, "to": userB, "text": "cold"}})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "conversation_not_started", resp.Errors[0].Extensions["code"])
		})

		t.Run("NumberOfAnotherAccountIsForbidden", func(t *testing.T) {
			resp := b.query(t, b.other, send, map[string]any{"in": map[string]any{"service": "WHATSAPP", "from": agentA, "to": userA, "text": "hijack"}})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "number_not_permitted", resp.Errors[0].Extensions["code"])
		})
	})
}
