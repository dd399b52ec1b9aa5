package graphql_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

const transcriptQuery = `query($id: ID!, $first: Int, $before: String) {
  thread(id: $id) { transcript(first: $first, before: $before) { text nextCursor } }
}`

type transcriptData struct {
	Thread *struct {
		Transcript struct {
			Text       string  `json:"text"`
			NextCursor *string `json:"nextCursor"`
		} `json:"transcript"`
	} `json:"thread"`
}

// restGet reads a REST path as c and returns the status, the body and the
// X-Next-Cursor header.
func (b *testBundle) restGet(t *testing.T, c credentials, path string) (int, []byte, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+path, nil)
	require.NoError(t, err)
	req.Header = c.headers()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, raw, res.Header.Get("X-Next-Cursor")
}

func TestThreadTranscript(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		ctx := context.Background()
		at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
		th := messaging.Thread{ID: ident.New(ident.Thread), AccountID: b.acme.accountID, Service: account.WhatsApp, Type: messaging.Individual,
			AgentNumber: agentA, Contact: userA, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, b.db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th,
			Participants: []messaging.Participant{{Address: agentA, IsAgent: true}, {Address: userA}}}}}))
		message := func(dir messaging.Direction, c messaging.Content, after time.Duration) messaging.Message {
			m := messaging.Message{ID: ident.New(ident.Message), AccountID: th.AccountID, ThreadID: th.ID, Service: th.Service, Direction: dir,
				From: agentA, To: userA, Content: c, Status: messaging.Delivered, CreatedAt: at.Add(after), UpdatedAt: at.Add(after)}
			if dir == messaging.Inbound {
				m.From, m.To, m.SenderName, m.Status = userA, agentA, "Ann", messaging.Received
			}
			return m
		}
		require.NoError(t, b.db.Commit(ctx, writes.Batch{Messages: []messaging.Message{
			message(messaging.Inbound, messaging.Content{Kind: messaging.KindText, Text: "Where is it?"}, 0),
			message(messaging.OutboundAPI, messaging.Content{Kind: messaging.KindLocation, Latitude: 52.37, Longitude: 4.89, PlaceName: "Dam"}, 30*time.Second),
			message(messaging.Inbound, messaging.Content{Kind: messaging.KindImage, MediaURL: "https://cdn.example.com/dam.jpg", Caption: "this?"}, time.Minute),
		}}))
		lines := []string{
			"[2026-11-25T10:00:00Z] Ann (+14155550111): Where is it?\n",
			"[2026-11-25T10:00:30Z] agent (+14155550100): [location: 52.37, 4.89 \"Dam\"]\n",
			"[2026-11-25T10:01:00Z] Ann (+14155550111): [image: https://cdn.example.com/dam.jpg caption \"this?\"]\n",
		}

		t.Run("WholeThread", func(t *testing.T) {
			var d transcriptData
			b.data(t, b.acme, transcriptQuery, map[string]any{"id": th.ID}, &d)
			require.Equal(t, strings.Join(lines, ""), d.Thread.Transcript.Text, "oldest first")
			require.Nil(t, d.Thread.Transcript.NextCursor)

			status, body, _ := b.restGet(t, b.acme, "/v1/messages/threads/"+b.acme.accountID+"/get-messages/"+th.ID+"?format=transcript")
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, d.Thread.Transcript.Text, string(body), "the same text as REST")
		})

		t.Run("PagesWithTheCursorsRESTAndMessagesGive", func(t *testing.T) {
			var d transcriptData
			b.data(t, b.acme, transcriptQuery, map[string]any{"id": th.ID, "first": 2}, &d)
			require.Equal(t, lines[1]+lines[2], d.Thread.Transcript.Text, "the newest page, oldest first inside")
			require.NotNil(t, d.Thread.Transcript.NextCursor)
			next := *d.Thread.Transcript.NextCursor

			status, body, header := b.restGet(t, b.acme, "/v1/messages/threads/"+b.acme.accountID+"/get-messages/"+th.ID+"?limit=2")
			require.Equal(t, http.StatusOK, status)
			var page struct {
				NextCursor *string `json:"next_cursor"`
			}
			require.NoError(t, json.Unmarshal(body, &page))
			require.Empty(t, header, "JSON pages carry the cursor in the body")
			require.Equal(t, next, *page.NextCursor, "REST's next_cursor")
			var m struct {
				Thread struct {
					Messages struct {
						PageInfo pageInfo `json:"pageInfo"`
					} `json:"messages"`
				} `json:"thread"`
			}
			b.data(t, b.acme, `query($id: ID!) { thread(id: $id) { messages(first: 2) { pageInfo { endCursor } } } }`, map[string]any{"id": th.ID}, &m)
			require.Equal(t, next, *m.Thread.Messages.PageInfo.EndCursor, "Thread.messages' end cursor")

			b.data(t, b.acme, transcriptQuery, map[string]any{"id": th.ID, "first": 2, "before": next}, &d)
			require.Equal(t, lines[0], d.Thread.Transcript.Text)
			require.Nil(t, d.Thread.Transcript.NextCursor, "the last page")
		})

		t.Run("ACursorOfAnotherThreadOrAnEditedOneIsAValidationError", func(t *testing.T) {
			_, other := b.inbound(t, b.acme, userB, agentA, "one")
			b.inbound(t, b.acme, userB, agentA, "two")
			var d transcriptData
			b.data(t, b.acme, transcriptQuery, map[string]any{"id": other, "first": 1}, &d)
			require.NotNil(t, d.Thread.Transcript.NextCursor)
			theirs := *d.Thread.Transcript.NextCursor

			resp := b.query(t, b.acme, transcriptQuery, map[string]any{"id": th.ID, "before": theirs})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
			require.Contains(t, resp.Errors[0].Message, "another thread")
			resp = b.query(t, b.acme, `query($id: ID!, $after: String) { thread(id: $id) { messages(after: $after) { nodes { id } } } }`,
				map[string]any{"id": th.ID, "after": theirs})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])

			edited := theirs[:len(theirs)-2] + "AA"
			if edited == theirs {
				edited = theirs[:len(theirs)-2] + "BB"
			}
			resp = b.query(t, b.acme, transcriptQuery, map[string]any{"id": other, "before": edited})
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
			require.Contains(t, resp.Errors[0].Message, "malformed or was altered")
		})

		t.Run("AnotherAccountSeesNoThread", func(t *testing.T) {
			resp := b.query(t, b.other, transcriptQuery, map[string]any{"id": th.ID})
			require.Empty(t, resp.Errors)
			require.JSONEq(t, `{"thread": null}`, string(resp.Data))
		})

		t.Run("ListedThreadsHaveTheirTranscripts", func(t *testing.T) {
			var d struct {
				Threads struct {
					Nodes []struct {
						ID         string `json:"id"`
						Transcript struct {
							Text string `json:"text"`
						} `json:"transcript"`
					} `json:"nodes"`
				} `json:"threads"`
			}
			b.data(t, b.acme, `{ threads(first: 10) { nodes { id transcript(first: 1) { text } } } }`, nil, &d)
			texts := map[string]string{}
			for _, n := range d.Threads.Nodes {
				texts[n.ID] = n.Transcript.Text
			}
			require.Equal(t, lines[2], texts[th.ID], "each thread its own newest line")
			require.Len(t, texts, 2)
		})
	})
}
