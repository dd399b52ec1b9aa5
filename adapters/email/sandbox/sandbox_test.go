package sandbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/emailtest"
	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// The sandbox sender holds to the Sender contract; what it delivered is
// what the mailbox in the database kept (the Outgoing contract emails have
// no account: they are kept under the empty one).
func TestSenderContract(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		emailtest.Sender(t, func(t *testing.T) emailtest.Harness {
			mailbox := dbtest.Open(t, dialect).MailboxStore()
			return emailtest.Harness{Sender: sandbox.New(mailbox, appemail.DefaultMailboxLimits, nil), Delivered: func(t *testing.T) []emailtest.Delivered {
				page, err := mailbox.Kept(context.Background(), "", 0, 100)
				require.NoError(t, err)
				var out []emailtest.Delivered
				for _, k := range page.Emails {
					d, err := emailtest.FromKept(k)
					require.NoError(t, err)
					out = append(out, d)
				}
				return out
			}}
		})
	})
}
