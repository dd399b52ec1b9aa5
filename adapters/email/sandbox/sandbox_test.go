package sandbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/emailtest"
	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	appemail "github.com/switchboard-dev/switchboard/application/email"
)

func TestSenderContract(t *testing.T) {
	t.Parallel()
	emailtest.Sender(t, func(t *testing.T) emailtest.Harness {
		m := sandbox.New(nil)
		return emailtest.Harness{Sender: m, Delivered: func(t *testing.T) []emailtest.Delivered {
			var out []emailtest.Delivered
			for _, o := range m.Sent() {
				out = append(out, emailtest.FromOutgoing(o))
			}
			return out
		}}
	})
}

// The mailbox lists each account's emails, newest first, and no other's.
func TestKeptByAccount(t *testing.T) {
	t.Parallel()
	m := sandbox.New(nil)
	ctx := context.Background()
	for _, out := range []appemail.Outgoing{
		{AccountID: "acc_a", Subject: "first"}, {AccountID: "acc_b", Subject: "other"}, {AccountID: "acc_a", Subject: "second"},
	} {
		_, err := m.Send(ctx, out)
		require.NoError(t, err)
	}
	kept, err := m.Kept(ctx, "acc_a")
	require.NoError(t, err)
	require.Len(t, kept, 2)
	require.Equal(t, "second", kept[0].Subject)
	require.Equal(t, "first", kept[1].Subject)
	none, err := m.Kept(ctx, "acc_c")
	require.NoError(t, err)
	require.Empty(t, none)
}
