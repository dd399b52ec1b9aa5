package bootstrap_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/bootstrap"
)

// The production graph must be complete: every constructor's inputs are
// provided. ValidateApp checks that without running any constructor.
func TestProductionGraphIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, fx.ValidateApp(bootstrap.Options(bootstrap.Defaults())))
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := bootstrap.ParsePrefixes(" 10.0.0.0/8, fd00::/8,192.168.1.7 ,")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.168.1.7/32"),
	}, got)
	_, err = bootstrap.ParsePrefixes("10.0.0.0/8,nonsense")
	require.ErrorContains(t, err, "nonsense")
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := bootstrap.Defaults()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(dir, "db", "s.db")

	first, err := cfg.Keyring()
	require.NoError(t, err, "a SQLite deployment generates its key")
	second, err := cfg.Keyring()
	require.NoError(t, err)
	require.Equal(t, first.Hash("p", "v"), second.Hash("p", "v"), "the generated key is kept and reused")

	cfg.DatabaseURL = "postgres://127.0.0.1/x"
	_, err = cfg.Keyring()
	require.ErrorContains(t, err, "SWITCHBOARD_SECRET_KEY", "Postgres replicas must share a configured key")

	cfg.SecretKey = strings.Repeat("ab", 32)
	_, err = cfg.Keyring()
	require.NoError(t, err)
	cfg.SecretKey = "short"
	_, err = cfg.Keyring()
	require.ErrorContains(t, err, "at least 32 bytes")
}
