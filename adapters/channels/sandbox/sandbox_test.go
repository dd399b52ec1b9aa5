package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/channeltest"
	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestContract(t *testing.T) {
	t.Parallel()
	channeltest.Run(t, func(t *testing.T) channeltest.Bundle {
		return channeltest.Bundle{
			Provider:  sandbox.Provider{},
			Number:    account.Number{ID: "num_1", Number: "+14155550100", Service: account.WhatsApp, Provider: sandbox.Name, Enabled: true},
			Recipient: "+14155550111",
			MediaURL:  "https://media.example/cat.jpg",
		}
	})
}

func TestReservedNumbersSimulateFailures(t *testing.T) {
	t.Parallel()
	send := func(to string) error {
		_, err := sandbox.Provider{}.Send(context.Background(), messaging.Outbound{To: to, Content: domain.Content{Kind: domain.KindText, Text: "x"}})
		return err
	}
	var pe *messaging.ProviderError
	require.True(t, errors.As(send(sandbox.UnreachableNumber), &pe))
	require.True(t, pe.Permanent)
	require.True(t, errors.As(send(sandbox.DownNumber), &pe))
	require.False(t, pe.Permanent)
	require.True(t, errors.As(send(sandbox.RateLimitedNumber), &pe))
	require.Positive(t, pe.RetryAfter)
}
