package graphql_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

func TestWebhooks(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		received := make(chan string, 16)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			received <- string(body)
		}))
		t.Cleanup(receiver.Close)

		var none map[string]any
		b.data(t, b.acme, `{ webhook { url } }`, nil, &none)
		require.Nil(t, none["webhook"], "no webhook yet")

		type update struct {
			UpdateWebhook struct {
				Webhook struct {
					URL     string   `json:"url"`
					Enabled bool     `json:"enabled"`
					Events  []string `json:"events"`
				} `json:"webhook"`
				Secret *string `json:"secret"`
			} `json:"updateWebhook"`
		}
		var u update
		set := `mutation($url: String!, $events: [String!]) { updateWebhook(input: {url: $url, events: $events}) { webhook { url enabled events } secret } }`
		b.data(t, b.acme, set, map[string]any{"url": receiver.URL + "/hook", "events": []string{"message.received"}}, &u)
		require.Equal(t, receiver.URL+"/hook", u.UpdateWebhook.Webhook.URL)
		require.True(t, u.UpdateWebhook.Webhook.Enabled)
		require.Equal(t, []string{"message.received"}, u.UpdateWebhook.Webhook.Events)
		require.NotNil(t, u.UpdateWebhook.Secret)
		require.True(t, strings.HasPrefix(*u.UpdateWebhook.Secret, "whsec_"))
		b.data(t, b.acme, set, map[string]any{"url": receiver.URL + "/hook2"}, &u)
		require.Nil(t, u.UpdateWebhook.Secret, "the secret is shown once")
		require.Empty(t, u.UpdateWebhook.Webhook.Events, "every event type")

		resp := b.query(t, b.acme, set, map[string]any{"url": "ftp://example.com/x"})
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])

		msgID, thread := b.inbound(t, b.acme, userA, agentA, "hook me")
		select {
		case body := <-received:
			require.Contains(t, body, msgID)
		case <-t.Context().Done():
		}

		type deliveries struct {
			WebhookDeliveries struct {
				Nodes []struct {
					ID        string  `json:"id"`
					EventType string  `json:"eventType"`
					ThreadID  *string `json:"threadId"`
					Status    string  `json:"status"`
					Payload   string  `json:"payload"`
					Log       []struct {
						StatusCode int `json:"statusCode"`
					} `json:"log"`
				} `json:"nodes"`
				TotalCount int `json:"totalCount"`
			} `json:"webhookDeliveries"`
		}
		q := `query($s: WebhookDeliveryStatus) { webhookDeliveries(status: $s) { nodes { id eventType threadId status payload log { statusCode } } totalCount } }`
		var d deliveries
		eventually(t, func() bool {
			b.data(t, b.acme, q, map[string]any{"s": "SUCCEEDED"}, &d)
			return d.WebhookDeliveries.TotalCount == 1
		}, "the delivery succeeds")
		n := d.WebhookDeliveries.Nodes[0]
		require.Equal(t, "message.received", n.EventType)
		require.Equal(t, thread, *n.ThreadID)
		require.Contains(t, n.Payload, msgID)
		require.Equal(t, 200, n.Log[0].StatusCode)

		b.data(t, b.other, q, nil, &d)
		require.Zero(t, d.WebhookDeliveries.TotalCount, "another account sees none of them")
	})
}
