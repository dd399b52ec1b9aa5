package bootstrap_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/bootstrap"
)

// A relay URL or DKIM setting that cannot work stops the start-up, before
// anything is migrated; a good one builds the app.
func TestSMTPSettingsAreChecked(t *testing.T) {
	t.Parallel()
	cfg := bootstrap.Defaults()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	require.NoError(t, cfg.Check(), "no relay: the sandbox mailbox")

	cfg.SMTPURL = "smtp://user:pass@relay.example.com:587?tls=sometimes"
	require.ErrorContains(t, cfg.Check(), "SWITCHBOARD_SMTP_URL")
	cfg.SMTPURL = "http://relay.example.com"
	require.ErrorContains(t, cfg.Check(), "SWITCHBOARD_SMTP_URL")

	cfg.SMTPURL = "smtp://user:pass@relay.example.com:587?tls=starttls"
	require.NoError(t, cfg.Check())
	require.NoError(t, fx.ValidateApp(bootstrap.Options(cfg)))

	cfg.SMTPDKIM = "example.com=sel:/does/not/exist.pem"
	require.ErrorContains(t, cfg.Check(), "SWITCHBOARD_SMTP_DKIM")
}

// --production without a relay refuses to start unless the sandbox
// mailbox is asked for; a relay and the sandbox together are refused;
// the mailbox's bounds are checked.
func TestProductionNeedsARelayOrTheSandbox(t *testing.T) {
	t.Parallel()
	cfg := bootstrap.Defaults()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	cfg.Production = true
	require.ErrorIs(t, cfg.Check(), bootstrap.ErrSandboxInProduction)
	cfg.SandboxEmail = true
	require.NoError(t, cfg.Check())
	require.NoError(t, fx.ValidateApp(bootstrap.Options(cfg)))

	cfg.SMTPURL = "smtp://user:pass@relay.example.com:587?tls=starttls"
	require.ErrorContains(t, cfg.Check(), "not both")
	cfg.SandboxEmail = false
	require.NoError(t, cfg.Check(), "a relay in production")

	cfg.SMTPURL, cfg.Production = "", false
	cfg.Mailbox.AccountEmails = 0
	require.ErrorContains(t, cfg.Check(), "sandbox mailbox")
}
