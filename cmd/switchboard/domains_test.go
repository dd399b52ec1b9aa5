package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CLI shows the MX record a domain publishes to receive mail through
// the SMTP listener (issue 37), as docs/email.md prints it, and refuses
// to guess the host.
func TestDomainsDNSPrintsTheMXRecord(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"domains", "dns", "--domain", "Mail.Acme.Example", "--smtp-hostname", "mx.acme.example"})
	require.NoError(t, cmd.ExecuteContext(context.Background()), errOut.String())
	require.Equal(t, "mail.acme.example. IN MX 10 mx.acme.example.\n"+
		"_dmarc.mail.acme.example. IN TXT v=DMARC1; p=quarantine\n", out.String())

	out.Reset()
	errOut.Reset()
	cmd = newRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"domains", "dns", "--domain", "mail.acme.example"})
	err := cmd.ExecuteContext(context.Background())
	require.ErrorContains(t, err, "--smtp-hostname")
	require.Empty(t, out.String())
}
