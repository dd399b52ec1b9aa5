package graphql_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

type timelineData struct {
	Thread struct {
		Messages struct {
			Nodes []struct {
				ID       string `json:"id"`
				Status   string `json:"status"`
				Timeline []struct {
					Status      string `json:"status"`
					At          string `json:"at"`
					FailureCode string `json:"failureCode"`
					FailureText string `json:"failureText"`
				} `json:"timeline"`
			} `json:"nodes"`
		} `json:"messages"`
	} `json:"thread"`
}

const timelineQuery = `query($t: ID!) { thread(id: $t) { messages(first: 10) { nodes { id status timeline { status at failureCode failureText } } } } }`

// A message's timeline is its life as the event log recorded it: a reply
// queued, then delivered by the sandbox; one to the sandbox's unreachable
// user failed with why; an inbound message received. Another account sees
// none of it.
func TestMessageTimeline(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		in, thread := b.inbound(t, b.acme, userA, agentA, "hello")
		send := `mutation($to: String!) { sendMessage(input: {service: WHATSAPP, from: "` + agentA + `", to: $to, text: "hi back"}) { id status } }`
		var sent struct {
			SendMessage struct{ ID, Status string } `json:"sendMessage"`
		}
		b.data(t, b.acme, send, map[string]any{"to": userA}, &sent)
		require.Equal(t, "QUEUED", sent.SendMessage.Status)

		var got timelineData
		eventually(t, func() bool {
			b.data(t, b.acme, timelineQuery, map[string]any{"t": thread}, &got)
			return len(got.Thread.Messages.Nodes) == 2 && got.Thread.Messages.Nodes[0].Status == "DELIVERED"
		}, "the reply is delivered")
		reply, inbound := got.Thread.Messages.Nodes[0], got.Thread.Messages.Nodes[1]
		require.Equal(t, sent.SendMessage.ID, reply.ID)
		require.Len(t, reply.Timeline, 2, "%+v", reply.Timeline)
		require.Equal(t, "QUEUED", reply.Timeline[0].Status)
		require.Equal(t, "DELIVERED", reply.Timeline[1].Status)
		require.LessOrEqual(t, reply.Timeline[0].At, reply.Timeline[1].At)
		require.Equal(t, in, inbound.ID)
		require.Len(t, inbound.Timeline, 1)
		require.Equal(t, "RECEIVED", inbound.Timeline[0].Status)

		// The sandbox's unreachable user: the send fails at once.
		const unreachable = "+15005550001"
		_, failedThread := b.inbound(t, b.acme, unreachable, agentA, "write me back")
		b.data(t, b.acme, send, map[string]any{"to": unreachable}, &sent)
		eventually(t, func() bool {
			b.data(t, b.acme, timelineQuery, map[string]any{"t": failedThread}, &got)
			return got.Thread.Messages.Nodes[0].Status == "FAILED"
		}, "the send fails")
		steps := got.Thread.Messages.Nodes[0].Timeline
		require.Len(t, steps, 2, "%+v", steps)
		require.Equal(t, "FAILED", steps[1].Status)
		require.Equal(t, "recipient_unreachable", steps[1].FailureCode)
		require.NotEmpty(t, steps[1].FailureText)

		// Another account's message: no thread, no timeline.
		var other struct {
			Message *struct{} `json:"message"`
		}
		b.data(t, b.other, `query($m: ID!) { message(id: $m) { timeline { status } } }`, map[string]any{"m": sent.SendMessage.ID}, &other)
		require.Nil(t, other.Message)
	})
}
