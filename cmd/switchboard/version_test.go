package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionLine(t *testing.T) {
	t.Parallel()
	platform := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	require.Equal(t, "switchboard dev ("+platform+")", versionLine(nil, false), "without build information")
	require.Equal(t, "switchboard dev ("+platform+")", versionLine(&debug.BuildInfo{}, true), "built outside a repository")

	info := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-25T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	require.Equal(t, "switchboard dev (commit 0123456789ab-dirty, 2026-11-25T10:00:00Z, "+platform+")", versionLine(info, true))
}

func TestVersionFlagAndCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errOut bytes.Buffer
		cmd := newRootCommand(&out, &errOut)
		cmd.SetArgs(args)
		require.NoError(t, cmd.ExecuteContext(context.Background()), args)
		require.Equal(t, buildVersion()+"\n", out.String(), args)
		require.Empty(t, errOut.String(), args)
	}
}

func TestVersionAndMistypedCommandsIgnoreSettings(t *testing.T) {
	// Not parallel: it fakes the environment.
	lookupEnv = func(name string) (string, bool) {
		if name == "SWITCHBOARD_LOG_LEVEL" {
			return "loud", true
		}
		return "", false
	}
	t.Cleanup(func() { lookupEnv = os.LookupEnv })
	var out bytes.Buffer
	cmd := newRootCommand(&out, &out)
	cmd.SetArgs([]string{"version"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	require.Equal(t, buildVersion()+"\n", out.String())

	// A mistyped command is named before the bad setting...
	cmd = newRootCommand(&out, &out)
	cmd.SetArgs([]string{"accounts", "bogus"})
	var usage *usageError
	require.ErrorAs(t, cmd.ExecuteContext(context.Background()), &usage)
	// ...and a real one still reads the settings.
	cmd = newRootCommand(&out, &out)
	cmd.SetArgs([]string{"accounts", "list"})
	require.ErrorContains(t, cmd.ExecuteContext(context.Background()), "log level")
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		msg  string
		// usage is a line of the usage printed with the error.
		usage string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "switchboard"`, "migrate"},
		{[]string{"acounts"}, `unknown command "acounts" for "switchboard" (did you mean accounts?)`, "accounts"},
		{[]string{"accounts", "bogus"}, `unknown command "bogus" for "switchboard accounts"`, "create"},
		{[]string{"keys", "lst"}, `unknown command "lst" for "switchboard keys" (did you mean list?)`, "revoke"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		cmd := newRootCommand(&out, &errOut)
		cmd.SetArgs(c.args)
		err := cmd.ExecuteContext(context.Background())
		var usage *usageError
		require.True(t, errors.As(err, &usage), "%v: %v", c.args, err)
		require.Equal(t, c.msg, usage.msg)
		require.Contains(t, usage.usage, c.usage)
		require.Empty(t, out.String(), "nothing on stdout for %v", c.args)
	}

	// A group given alone shows its help, as asked.
	var out bytes.Buffer
	cmd := newRootCommand(&out, &out)
	cmd.SetArgs([]string{"accounts"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	require.Contains(t, out.String(), "Available Commands")
}
