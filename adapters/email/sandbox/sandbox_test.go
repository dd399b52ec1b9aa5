package sandbox_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/email/emailtest"
	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
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
