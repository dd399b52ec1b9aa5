package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestSecretFlagsReadFilesAndStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("123:abc\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))

	parse := func(stdin string, args ...string) (string, error) {
		var token string
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.Var(&secretValue{target: &token, stdin: strings.NewReader(stdin)}, "bot-token", "")
		err := f.Parse(args)
		return token, err
	}
	got, err := parse("", "--bot-token", "123:plain")
	require.NoError(t, err)
	require.Equal(t, "123:plain", got, "a plain value is taken as it is")

	got, err = parse("", "--bot-token", "@"+tokenFile)
	require.NoError(t, err)
	require.Equal(t, "123:abc", got, "@FILE reads the file, without its line break")

	got, err = parse("456:def\r\n", "--bot-token", "@-")
	require.NoError(t, err)
	require.Equal(t, "456:def", got, "@- reads standard input")

	_, err = parse("", "--bot-token", "@"+filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, "read the value from @")
	_, err = parse("", "--bot-token", "@"+empty)
	require.ErrorContains(t, err, "is empty")
}

// Help and error messages print a flag's value: a secret's never shows.
func TestSecretFlagsNeverPrintTheirValue(t *testing.T) {
	t.Parallel()
	token := "123:secret"
	v := &secretValue{target: &token}
	require.Equal(t, "(set)", v.String())
	require.NotContains(t, v.String(), "secret")
	empty := ""
	require.Empty(t, (&secretValue{target: &empty}).String())
}
