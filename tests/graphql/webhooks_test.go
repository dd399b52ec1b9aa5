package graphql_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

func TestWebhooks(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
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

// The webhook operations the dashboard's Webhook page uses besides the
// setting and the log: the types to choose from, rotation (the new secret
// once, the old one signing beside it for a day), a test delivery and a
// replay, each only for the caller's own endpoint.
func TestWebhookOperations(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		// The first request is refused with markup in the body; the retry
		// and every later one succeed.
		var calls atomic.Int32
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.WriteHeader(http.StatusTeapot)
				_, _ = io.WriteString(w, "<script>alert(1)</script>")
			}
		}))
		t.Cleanup(receiver.Close)

		var types struct {
			WebhookEventTypes []string `json:"webhookEventTypes"`
		}
		b.data(t, b.acme, `{ webhookEventTypes }`, nil, &types)
		require.Contains(t, types.WebhookEventTypes, "message.received")
		require.Contains(t, types.WebhookEventTypes, "group.left")
		require.NotContains(t, types.WebhookEventTypes, "webhook.test", "always sent, never chosen")
		require.NotContains(t, types.WebhookEventTypes, "endpoint.disabled")

		for _, op := range []string{`mutation { rotateWebhookSecret { secret } }`, `mutation { testWebhook { id } }`} {
			resp := b.query(t, b.acme, op, nil)
			require.Len(t, resp.Errors, 1, op)
			require.Equal(t, "webhook_not_configured", resp.Errors[0].Extensions["code"], op)
		}

		type update struct {
			Webhook struct {
				PreviousSecretExpiresAt *string `json:"previousSecretExpiresAt"`
			} `json:"webhook"`
			Secret *string `json:"secret"`
		}
		var set struct {
			UpdateWebhook update `json:"updateWebhook"`
		}
		b.data(t, b.acme, `mutation($url: String!) { updateWebhook(input: {url: $url}) { webhook { previousSecretExpiresAt } secret } }`,
			map[string]any{"url": receiver.URL + "/hook"}, &set)
		require.NotNil(t, set.UpdateWebhook.Secret)
		require.Nil(t, set.UpdateWebhook.Webhook.PreviousSecretExpiresAt, "no rotation yet")

		var rotated struct {
			RotateWebhookSecret update `json:"rotateWebhookSecret"`
		}
		b.data(t, b.acme, `mutation { rotateWebhookSecret { webhook { previousSecretExpiresAt } secret } }`, nil, &rotated)
		require.NotNil(t, rotated.RotateWebhookSecret.Secret)
		require.True(t, strings.HasPrefix(*rotated.RotateWebhookSecret.Secret, "whsec_"))
		require.NotEqual(t, *set.UpdateWebhook.Secret, *rotated.RotateWebhookSecret.Secret)
		require.NotNil(t, rotated.RotateWebhookSecret.Webhook.PreviousSecretExpiresAt, "the old secret signs a while longer")
		var read struct {
			Webhook struct {
				PreviousSecretExpiresAt *string `json:"previousSecretExpiresAt"`
			} `json:"webhook"`
		}
		b.data(t, b.acme, `{ webhook { previousSecretExpiresAt } }`, nil, &read)
		require.Equal(t, rotated.RotateWebhookSecret.Webhook.PreviousSecretExpiresAt, read.Webhook.PreviousSecretExpiresAt)

		type delivery struct {
			ID        string `json:"id"`
			EventType string `json:"eventType"`
			Status    string `json:"status"`
			Attempts  int    `json:"attempts"`
			Log       []struct {
				StatusCode int    `json:"statusCode"`
				Response   string `json:"response"`
			} `json:"log"`
		}
		var tested struct {
			TestWebhook delivery `json:"testWebhook"`
		}
		b.data(t, b.acme, `mutation { testWebhook { id eventType status } }`, nil, &tested)
		require.Equal(t, "webhook.test", tested.TestWebhook.EventType)
		require.Equal(t, "PENDING", tested.TestWebhook.Status)

		var list struct {
			WebhookDeliveries struct {
				Nodes []delivery `json:"nodes"`
			} `json:"webhookDeliveries"`
		}
		logOf := func() []delivery {
			b.data(t, b.acme, `{ webhookDeliveries { nodes { id eventType status attempts log { statusCode response } } } }`, nil, &list)
			return list.WebhookDeliveries.Nodes
		}
		// The retry is due 5 s after the failure: more patience than a
		// plain wait, for a machine the whole suite keeps busy.
		require.Eventually(t, func() bool {
			ds := logOf()
			return len(ds) == 1 && ds[0].Status == "SUCCEEDED"
		}, time.Minute, 100*time.Millisecond, "the test delivery fails once, then succeeds")
		first := logOf()[0]
		require.Equal(t, tested.TestWebhook.ID, first.ID)
		require.Len(t, first.Log, 2)
		require.Equal(t, http.StatusTeapot, first.Log[0].StatusCode)
		require.Equal(t, "<script>alert(1)</script>", first.Log[0].Response, "the response as the receiver sent it")
		require.Equal(t, http.StatusOK, first.Log[1].StatusCode)

		var replayed struct {
			ReplayWebhookDelivery delivery `json:"replayWebhookDelivery"`
		}
		b.data(t, b.acme, `mutation($id: ID!) { replayWebhookDelivery(id: $id) { id status } }`, map[string]any{"id": first.ID}, &replayed)
		require.Equal(t, first.ID, replayed.ReplayWebhookDelivery.ID)
		require.Equal(t, "PENDING", replayed.ReplayWebhookDelivery.Status)
		eventually(t, func() bool {
			d := logOf()[0]
			return len(d.Log) == 3 && d.Status == "SUCCEEDED"
		}, "the replay is attempted, the earlier attempts kept")

		resp := b.query(t, b.other, `mutation($id: ID!) { replayWebhookDelivery(id: $id) { id } }`, map[string]any{"id": first.ID})
		require.Len(t, resp.Errors, 1)
		require.NotEqual(t, "internal_error", resp.Errors[0].Extensions["code"], "another account's delivery is not found: %v", resp.Errors[0])

		b.data(t, b.acme, `mutation($url: String!) { updateWebhook(input: {url: $url, enabled: false}) { secret } }`,
			map[string]any{"url": receiver.URL + "/hook"}, &set)
		resp = b.query(t, b.acme, `mutation { testWebhook { id } }`, nil)
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "webhook_disabled", resp.Errors[0].Extensions["code"])
	})
}
