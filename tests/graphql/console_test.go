package graphql_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// rest calls the REST API as c and decodes a 2xx answer.
func (b *testBundle) rest(t *testing.T, c credentials, method, path string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(t.Context(), method, b.base+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header = c.headers()
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	require.Less(t, res.StatusCode, 300, "%s %s: %s", method, path, out)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	return v
}

type emailsData struct {
	Emails struct {
		Nodes []struct {
			ID        string   `json:"id"`
			From      string   `json:"from"`
			To        string   `json:"to"`
			Cc        []string `json:"cc"`
			Subject   string   `json:"subject"`
			Status    string   `json:"status"`
			SMTPReply string   `json:"smtpReply"`
			SentAt    *string  `json:"sentAt"`
		} `json:"nodes"`
		PageInfo pageInfo `json:"pageInfo"`
	} `json:"emails"`
	SandboxMailbox struct {
		Enabled    bool `json:"enabled"`
		TotalCount int  `json:"totalCount"`
		Nodes      []struct {
			MessageID string   `json:"messageId"`
			From      string   `json:"from"`
			To        string   `json:"to"`
			Bcc       []string `json:"bcc"`
			Subject   string   `json:"subject"`
			Text      string   `json:"text"`
			HTML      string   `json:"html"`
			Headers   []struct {
				Name, Value string
			} `json:"headers"`
			AttachmentName *string         `json:"attachmentName"`
			Attachment     *map[string]any `json:"attachment"`
		} `json:"nodes"`
	} `json:"sandboxMailbox"`
}

const emailsQuery = `query($first: Int, $after: String) {
  emails(first: $first, after: $after) { nodes { id from to cc subject status smtpReply sentAt } pageInfo { hasNextPage endCursor } }
  sandboxMailbox(first: 10) { enabled totalCount nodes { messageId from to bcc subject text html headers { name value } attachmentName attachment { name contentType size sha256 } } }
}`

// The console's Email page reads the account's emails with their status,
// and the sandbox mailbox (make run has no relay) with what a relay would
// have received; another account sees none of them.
func TestEmailsAndSandboxMailbox(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
		domain := acc["data"].(map[string]any)["service_email_domain"].(string)
		b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/create-email", map[string]any{"address": "agent.one", "domain_name": domain})
		from := "agent.one@" + domain
		for i := range 3 {
			b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/send", map[string]any{
				"sender_address": from, "recipient_address": "ann@example.org", "subject": fmt.Sprintf("Report %d", i),
				"body": "<p>Hello <b>Ann</b></p>", "headers": map[string]any{"cc": "boss@example.org", "bcc": "audit@example.org", "X-Campaign": "spring"},
			})
		}

		var got emailsData
		eventually(t, func() bool {
			b.data(t, b.acme, emailsQuery, map[string]any{"first": 2}, &got)
			return len(got.Emails.Nodes) == 2 && got.Emails.Nodes[0].Status == "SENT" && got.Emails.Nodes[1].Status == "SENT" && got.SandboxMailbox.TotalCount == 3
		}, "the emails are delivered to the sandbox mailbox")
		first := got.Emails.Nodes[0]
		require.Equal(t, "Report 2", first.Subject, "newest first")
		require.Equal(t, from, first.From)
		require.Equal(t, []string{"boss@example.org"}, first.Cc)
		require.Contains(t, first.SMTPReply, "sandbox mailbox")
		require.NotNil(t, first.SentAt)
		require.True(t, got.Emails.PageInfo.HasNextPage)

		var rest emailsData
		b.data(t, b.acme, emailsQuery, map[string]any{"first": 2, "after": *got.Emails.PageInfo.EndCursor}, &rest)
		require.Len(t, rest.Emails.Nodes, 1)
		require.Equal(t, "Report 0", rest.Emails.Nodes[0].Subject)
		require.False(t, rest.Emails.PageInfo.HasNextPage)

		box := got.SandboxMailbox
		require.True(t, box.Enabled)
		require.Len(t, box.Nodes, 3)
		// The mailbox keeps emails in the order they were delivered, which
		// concurrent delivery jobs do not fix: find the one checked.
		subjects := make([]string, len(box.Nodes))
		for i, n := range box.Nodes {
			subjects[i] = n.Subject
		}
		require.ElementsMatch(t, []string{"Report 0", "Report 1", "Report 2"}, subjects)
		kept := box.Nodes[slices.Index(subjects, "Report 2")]
		require.Equal(t, []string{"audit@example.org"}, kept.Bcc, "bcc in the envelope")
		require.Equal(t, "<p>Hello <b>Ann</b></p>", kept.HTML)
		require.Contains(t, kept.Text, "Hello Ann")
		require.Contains(t, kept.Headers, struct{ Name, Value string }{"X-Campaign", "spring"})
		require.Nil(t, kept.AttachmentName)
		require.Nil(t, kept.Attachment)
		require.NotEmpty(t, kept.MessageID)

		var other emailsData
		b.data(t, b.other, emailsQuery, nil, &other)
		require.Empty(t, other.Emails.Nodes)
		require.True(t, other.SandboxMailbox.Enabled)
		require.Zero(t, other.SandboxMailbox.TotalCount)
		require.Empty(t, other.SandboxMailbox.Nodes)

		resp := b.query(t, b.acme, `{ emails(after: "nonsense") { nodes { id } } }`, nil)
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
	})
}

// The Overview's queue health: the account's jobs, counted per kind.
func TestQueueHealth(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	b.inbound(t, b.acme, userA, agentA, "hello")
	var got struct {
		QueueHealth struct {
			Ready, Scheduled, Running, Retrying, Dead int
			LagSeconds                                float64 `json:"lagSeconds"`
			At                                        string  `json:"at"`
			Kinds                                     []struct {
				Kind          string  `json:"kind"`
				OldestReadyAt *string `json:"oldestReadyAt"`
			} `json:"kinds"`
		} `json:"queueHealth"`
	}
	b.data(t, b.acme, `{ queueHealth { ready scheduled running retrying dead lagSeconds at kinds { kind oldestReadyAt } } }`, nil, &got)
	h := got.QueueHealth
	require.NotEmpty(t, h.At)
	require.GreaterOrEqual(t, h.LagSeconds, 0.0)
	require.Zero(t, h.Dead)
	require.NotNil(t, h.Kinds)
	for _, k := range h.Kinds {
		require.NotEmpty(t, k.Kind)
	}
}
