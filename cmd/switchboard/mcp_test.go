package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The MCP proxy takes its credentials from the environment only.
func TestMCPCommandTakesCredentialsFromTheEnvironmentOnly(t *testing.T) {
	// Not parallel: it fakes the environment.
	env := map[string]string{}
	lookupEnv = func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	t.Cleanup(func() { lookupEnv = os.LookupEnv })
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newRootCommand(&out, &out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}

	_, err := run("mcp", "--api-key", "swk_x")
	require.ErrorContains(t, err, "--api-key is refused")
	require.ErrorContains(t, err, "SWITCHBOARD_API_KEY")
	_, err = run("mcp", "--api-secret", "sws_x")
	require.ErrorContains(t, err, "--api-secret is refused")

	_, err = run("mcp")
	require.ErrorContains(t, err, "set SWITCHBOARD_API_KEY and SWITCHBOARD_API_SECRET in the environment")

	env["SWITCHBOARD_API_KEY"], env["SWITCHBOARD_API_SECRET"] = "swk_x", "sws_x"
	env["SWITCHBOARD_URL"] = "http://127.0.0.1:1"
	out, err := run("mcp")
	require.ErrorContains(t, err, "connect to http://127.0.0.1:1/mcp", "SWITCHBOARD_URL is the server")
	require.NotContains(t, err.Error(), "sws_x", "the secret is never shown")
	require.Empty(t, out, "standard output is the protocol's")
}
