// Package channeltest is the contract every channel provider keeps: run it
// from each provider's tests against that provider (and its fake server).
package channeltest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Bundle is what the contract needs: the provider, the agent number it
// sends from (with its opened settings), a recipient it can reach, and a
// media URL the provider can fetch.
type Bundle struct {
	Provider  messaging.Provider
	Number    account.Number
	Settings  map[string]string
	Recipient string
	MediaURL  string
}

// Run checks the provider's contract.
func Run(t *testing.T, setup func(t *testing.T) Bundle) {
	sends := map[string]domain.Content{
		"text":     {Kind: domain.KindText, Text: "hello from the contract suite"},
		"image":    {Kind: domain.KindImage, Caption: "a picture"},
		"document": {Kind: domain.KindDocument},
		"location": {Kind: domain.KindLocation, Latitude: 52.52, Longitude: 13.405, PlaceName: "Berlin"},
	}
	for name, content := range sends {
		t.Run("Send"+name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if !b.Provider.Capabilities().Sends(content.Kind) {
				return // this provider does not claim the kind; the service refuses it up front
			}
			if content.Kind.IsMedia() {
				content.MediaURL = b.MediaURL
			}
			ctx := context.Background()
			first, err := b.Provider.Send(ctx, messaging.Outbound{MessageID: "msg_a", Number: b.Number, Settings: b.Settings, ThreadTyp: domain.Individual, To: b.Recipient, Content: content})
			require.NoError(t, err)
			require.NotEmpty(t, first.ProviderMessageID, "a receipt names the provider's message id")
			require.Contains(t, []domain.Status{domain.Sent, domain.Delivered}, first.Status)
			second, err := b.Provider.Send(ctx, messaging.Outbound{MessageID: "msg_b", Number: b.Number, Settings: b.Settings, ThreadTyp: domain.Individual, To: b.Recipient, Content: content})
			require.NoError(t, err)
			require.NotEqual(t, first.ProviderMessageID, second.ProviderMessageID, "each message gets its own id")
		})
	}
	t.Run("Capabilities", func(t *testing.T) {
		t.Parallel()
		caps := setup(t).Provider.Capabilities()
		require.True(t, caps.Sends(domain.KindText), "every provider sends text")
	})
	t.Run("HonoursCancellation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.Provider.Send(ctx, messaging.Outbound{MessageID: "msg_c", Number: b.Number, Settings: b.Settings, To: b.Recipient, Content: domain.Content{Kind: domain.KindText, Text: "x"}})
		require.Error(t, err)
	})
}
