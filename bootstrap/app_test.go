package bootstrap_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
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

// So must the operator commands' graph, built from the same modules.
func TestOperatorGraphIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, fx.ValidateApp(bootstrap.OperatorOptions(bootstrap.Defaults())))
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

// Origins are read as a browser sends them; anything else is refused
// with the form to use.
func TestParseOrigins(t *testing.T) {
	t.Parallel()
	got, err := bootstrap.ParseOrigins(" https://App.example.com, http://localhost:3000 ,")
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.example.com", "http://localhost:3000"}, got)
	for _, bad := range []string{"app.example.com", "https://app.example.com/", "https://app.example.com/mcp", "ftp://x.example",
		"https://u@x.example", "null", "https://x.example?q"} {
		_, err := bootstrap.ParseOrigins(bad)
		require.ErrorContains(t, err, "is not an origin", bad)
	}
	_, err = bootstrap.ParseOrigins("https://app.example.com:443")
	require.ErrorContains(t, err, "use https://app.example.com")
}

// Hosts are names or addresses without scheme or port.
func TestParseHosts(t *testing.T) {
	t.Parallel()
	got, err := bootstrap.ParseHosts("SB.example.com, 192.0.2.7,::1")
	require.NoError(t, err)
	require.Equal(t, []string{"sb.example.com", "192.0.2.7", "::1"}, got)
	for _, bad := range []string{"https://sb.example.com", "sb.example.com:443", "sb.example.com/mcp", "a b"} {
		_, err := bootstrap.ParseHosts(bad)
		require.ErrorContains(t, err, "is not a host name", bad)
	}
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

// Processes starting together on a fresh SQLite directory must all end up
// with the same generated key, never a partial one.
func TestGeneratedKeyIsSharedUnderConcurrentStarts(t *testing.T) {
	t.Parallel()
	for round := 0; round < 20; round++ {
		cfg := bootstrap.Defaults()
		cfg.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "s.db")
		const n = 8
		hashes := make(chan string, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, err := cfg.Keyring()
				if err != nil {
					errs <- err
					return
				}
				hashes <- string(k.Hash("p", "v"))
			}()
		}
		wg.Wait()
		close(errs)
		close(hashes)
		for err := range errs {
			require.NoError(t, err)
		}
		var first string
		for h := range hashes {
			if first == "" {
				first = h
			}
			require.Equal(t, first, h, "round %d: every process derives the same key", round)
		}
	}
}

func TestCheckRefusesBadConfigurationUpFront(t *testing.T) {
	t.Parallel()
	cfg := bootstrap.Defaults()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	require.NoError(t, cfg.Check())
	require.Equal(t, "http", cfg.Scheme())

	bad := cfg
	bad.DatabaseURL = "mysql://x"
	require.ErrorContains(t, bad.Check(), "must start with sqlite: or postgres://")
	_, err := bad.Keyring()
	require.ErrorContains(t, err, "must start with sqlite: or postgres://", "not a misleading Postgres message")

	wide := cfg
	wide.Limits.AuthFailuresIPv6Prefix = 129
	require.ErrorContains(t, wide.Check(), "auth-failures-ipv6-prefix must be 1 to 128")

	half := cfg
	half.TLSCertFile = "/x/cert.pem"
	require.ErrorContains(t, half.Check(), "both a certificate file and a key file")

	missing := cfg
	missing.TLSCertFile, missing.TLSKeyFile = "/nonexistent/c.pem", "/nonexistent/k.pem"
	require.ErrorContains(t, missing.Check(), "load TLS certificate")
	require.Equal(t, "https", missing.Scheme())
}
