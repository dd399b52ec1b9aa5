package mcp_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// Every tool is offered with an object input schema, a description and
// annotations that say what it does to the world.
func TestToolsAreDescribed(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	byName := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	var names []string
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	require.Equal(t, []string{
		"create_cron_job", "delete_cron_job", "get_contact", "get_email", "get_media", "get_messages", "list_contacts", "list_cron_jobs", "list_emails", "list_templates",
		"list_threads", "manage_group", "mark_read", "pause_cron_job", "react", "reply_email", "resume_cron_job", "send_email", "send_message", "send_template",
		"send_typing", "set_agent_profile", "wait_for_message",
	}, names)
	for name, tool := range byName {
		require.NotEmpty(t, tool.Description, name)
		schema, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var in struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(schema, &in))
		require.Equal(t, "object", in.Type, name)
		require.NotNil(t, tool.OutputSchema, name)
		require.NotNil(t, tool.Annotations, name)
	}
	for _, name := range []string{"list_threads", "get_messages", "wait_for_message", "list_cron_jobs", "list_contacts", "get_contact", "list_emails", "get_email"} {
		require.True(t, byName[name].Annotations.ReadOnlyHint, name)
	}
	for _, name := range []string{"send_message", "send_template", "send_email", "reply_email", "create_cron_job", "manage_group", "pause_cron_job", "resume_cron_job", "delete_cron_job", "set_agent_profile"} {
		require.False(t, byName[name].Annotations.ReadOnlyHint, name)
	}
	require.True(t, *byName["delete_cron_job"].Annotations.DestructiveHint)
	require.False(t, *byName["send_message"].Annotations.DestructiveHint)
	for _, name := range []string{"pause_cron_job", "resume_cron_job", "delete_cron_job"} {
		require.True(t, byName[name].Annotations.IdempotentHint, name)
	}
	require.False(t, byName["send_message"].Annotations.IdempotentHint)

	// The range and default of timeout_seconds are in the schema.
	raw, _ := json.Marshal(byName["wait_for_message"].InputSchema)
	var wait struct {
		Properties struct {
			Timeout struct {
				Minimum float64 `json:"minimum"`
				Maximum float64 `json:"maximum"`
				Default float64 `json:"default"`
			} `json:"timeout_seconds"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &wait))
	require.Equal(t, 1.0, wait.Properties.Timeout.Minimum)
	require.Equal(t, 60.0, wait.Properties.Timeout.Maximum)
	require.Equal(t, 30.0, wait.Properties.Timeout.Default)
}

// A conversation through the tools: a user writes, the agent answers,
// lists its threads and reads the thread back, newest first, page by page.
func TestSendListAndRead(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")

		var sent struct {
			MessageID string `json:"message_id"`
			ThreadID  string `json:"thread_id"`
			Status    string `json:"status"`
			Body      string `json:"body"`
			To        string `json:"to"`
		}
		ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "Hello Ann"}, &sent)
		require.Equal(t, thread, sent.ThreadID)
		require.Equal(t, "queued", sent.Status)
		require.Equal(t, "Hello Ann", sent.Body)
		require.Equal(t, userA, sent.To)

		var media struct {
			MessageID string `json:"message_id"`
			Body      string `json:"body"`
		}
		ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA,
			"media": map[string]any{"type": "image", "url": "https://example.com/plan.png", "caption": "The plan"}}, &media)
		require.Equal(t, "The plan", media.Body)

		var threads struct {
			Threads []struct {
				ThreadID     string   `json:"thread_id"`
				Type         string   `json:"type"`
				Contact      string   `json:"contact"`
				Participants []string `json:"participants"`
				Resource     string   `json:"resource"`
				LastMessage  struct {
					Content string `json:"content"`
				} `json:"last_message"`
			} `json:"threads"`
			TotalCount int  `json:"total_count"`
			HasMore    bool `json:"has_more"`
		}
		ok(t, cs, "list_threads", map[string]any{}, &threads)
		require.Equal(t, 1, threads.TotalCount)
		require.False(t, threads.HasMore)
		require.Equal(t, thread, threads.Threads[0].ThreadID)
		require.Equal(t, "individual", threads.Threads[0].Type)
		require.Equal(t, userA, threads.Threads[0].Contact)
		require.Equal(t, "switchboard://threads/"+thread, threads.Threads[0].Resource)
		require.Equal(t, "The plan", threads.Threads[0].LastMessage.Content)

		ok(t, cs, "list_threads", map[string]any{"phone_number": userB}, &threads)
		require.Zero(t, threads.TotalCount, "the phone filter keeps only that number's threads")
		require.Empty(t, threads.Threads)

		type page struct {
			Messages []struct {
				MessageID string `json:"message_id"`
				Direction string `json:"direction"`
				Type      string `json:"type"`
				Text      string `json:"text"`
				MediaURL  string `json:"media_url"`
			} `json:"messages"`
			NextCursor string `json:"next_cursor"`
		}
		var all page
		ok(t, cs, "get_messages", map[string]any{"thread_id": thread}, &all)
		require.Len(t, all.Messages, 3)
		require.Equal(t, media.MessageID, all.Messages[0].MessageID, "newest first")
		require.Equal(t, "image", all.Messages[0].Type)
		require.Equal(t, "https://example.com/plan.png", all.Messages[0].MediaURL)
		require.Equal(t, "Hi!", all.Messages[2].Text)
		require.Equal(t, "inbound", all.Messages[2].Direction)
		require.Empty(t, all.NextCursor)

		var seen []string
		cursor := ""
		for range 3 {
			args := map[string]any{"thread_id": thread, "limit": 1}
			if cursor != "" {
				args["before"] = cursor
			}
			var p page
			ok(t, cs, "get_messages", args, &p)
			require.Len(t, p.Messages, 1)
			seen = append(seen, p.Messages[0].MessageID)
			cursor = p.NextCursor
		}
		require.Empty(t, cursor, "the last page has no cursor")
		for i := range all.Messages {
			require.Equal(t, all.Messages[i].MessageID, seen[i], "pages walk the thread back")
		}
	})
}

// Business failures are tool results carrying REST's code and message,
// never protocol errors; ids of another account are not found.
func TestBusinessErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)

		e := fails(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userB, "text": "Hello?"})
		require.Equal(t, "conversation_not_started", e.Code)
		require.Contains(t, e.Message, "has not started a conversation")

		e = fails(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentOther, "to": userA, "text": "Hello?"})
		require.Equal(t, "number_not_permitted", e.Code)

		_, otherThread := b.inbound(t, b.other, userA, agentOther, "Hi other")
		e = fails(t, cs, "get_messages", map[string]any{"thread_id": otherThread})
		require.Equal(t, "not_found", e.Code)
		missing := fails(t, cs, "get_messages", map[string]any{"thread_id": "thr_doesnotexist"})
		require.Equal(t, e, missing, "another account's thread answers like a missing one")
		e = fails(t, cs, "wait_for_message", map[string]any{"thread_id": otherThread, "timeout_seconds": 1})
		require.Equal(t, "not_found", e.Code)
		e = fails(t, cs, "send_message", map[string]any{"from": agentA, "thread_id": otherThread, "text": "Hi"})
		require.Equal(t, "not_found", e.Code)

		e = fails(t, cs, "send_message", map[string]any{"from": agentA, "text": "to nobody"})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "to", e.Fields[0].Field)
		e = fails(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "text", e.Fields[0].Field)
		e = fails(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": "not a number", "to": userA, "text": "x"})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "from", e.Fields[0].Field)
		e = fails(t, cs, "get_messages", map[string]any{"thread_id": otherThread, "before": "nonsense"})
		require.Equal(t, "not_found", e.Code, "another account's thread is not found whatever the cursor")
		_, ownThread := b.inbound(t, b.acme, userA, agentA, "Hi")
		e = fails(t, cs, "get_messages", map[string]any{"thread_id": ownThread, "before": "nonsense"})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "before", e.Fields[0].Field)
	})
}

// Arguments the input schema refuses are tool errors naming the argument.
func TestArgumentErrorsNameTheArgument(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
		typ   string
	}{
		{"send_message", map[string]any{"from": agentA, "to": 14155550111, "text": "x"}, "to", "string_type"},
		{"send_message", map[string]any{"to": userA, "text": "x"}, "from", "missing"},
		{"send_message", map[string]any{"from": agentA, "to": userA, "text": "x", "service": "sms"}, "service", "enum"},
		{"send_message", map[string]any{"from": agentA, "to": userA, "colour": "red"}, "colour", "extra_forbidden"},
		{"send_message", map[string]any{"from": agentA, "to": userA, "media": map[string]any{"type": "image"}}, "media.url", "missing"},
		{"get_messages", map[string]any{}, "thread_id", "missing"},
		{"get_messages", map[string]any{"thread_id": "thr_x", "limit": "ten"}, "limit", "integer_type"},
		{"wait_for_message", map[string]any{"timeout_seconds": 0}, "timeout_seconds", "greater_than_equal"},
		{"wait_for_message", map[string]any{"timeout_seconds": -1}, "timeout_seconds", "greater_than_equal"},
		{"wait_for_message", map[string]any{"timeout_seconds": 3600}, "timeout_seconds", "less_than_equal"},
		{"wait_for_message", map[string]any{"timeout_seconds": 1.5}, "timeout_seconds", "integer_type"},
		{"pause_cron_job", map[string]any{}, "id", "missing"},
	} {
		e := fails(t, cs, c.tool, c.args)
		require.Equal(t, "validation_error", e.Code, "%s %v", c.tool, c.args)
		require.NotEmpty(t, e.Fields, "%s %v", c.tool, c.args)
		require.Equal(t, c.field, e.Fields[0].Field, "%s %v: %s", c.tool, c.args, e.Message)
		require.Equal(t, c.typ, e.Fields[0].Type, "%s %v: %s", c.tool, c.args, e.Message)
		require.Contains(t, e.Message, c.field)
		t.Logf("%s %v: %s", c.tool, c.args, e.Message)
	}

	// An unknown tool is the protocol's error, not a tool result.
	_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "launch_rocket", Arguments: map[string]any{}})
	require.ErrorContains(t, err, `unknown tool "launch_rocket"`)
}

// An idempotency key makes a send happen once; the same key with other
// arguments is refused.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
		args := map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "Once", "idempotency_key": "k-1"}
		var first, again struct {
			MessageID string `json:"message_id"`
		}
		ok(t, cs, "send_message", args, &first)
		ok(t, cs, "send_message", args, &again)
		require.Equal(t, first.MessageID, again.MessageID)

		var page struct {
			Messages []any `json:"messages"`
		}
		ok(t, cs, "get_messages", map[string]any{"thread_id": thread}, &page)
		require.Len(t, page.Messages, 2, "the inbound message and one send")

		args["text"] = "Twice"
		e := fails(t, cs, "send_message", args)
		require.Equal(t, "idempotency_key_reused", e.Code)

		// A refusal is the key's answer too.
		refused := map[string]any{"service": "whatsapp", "from": agentA, "to": userB, "text": "x", "idempotency_key": "k-2"}
		require.Equal(t, "conversation_not_started", fails(t, cs, "send_message", refused).Code)
		b.inbound(t, b.acme, userB, agentA, "now I wrote")
		require.Equal(t, "conversation_not_started", fails(t, cs, "send_message", refused).Code, "the key answers as it did")

		status, _ := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
		require.Equal(t, http.StatusOK, status)
	})
}
