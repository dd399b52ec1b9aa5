package edge_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
)

// keyring is a keyed hash over a fixed key, as the server's keyring is.
type keyring []byte

func (k keyring) Hash(purpose, value string) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(purpose + "\x00" + value))
	return m.Sum(nil)
}

func TestCSRFTokens(t *testing.T) {
	t.Parallel()
	csrf := edge.NewCSRF(keyring("server key"))
	mine, other := "session-token-mine", "session-token-other"
	token := csrf.Token(mine)
	require.Equal(t, token, csrf.Token(mine), "the same for the whole session")
	require.True(t, csrf.Check(mine, token))
	require.NotEqual(t, token, csrf.Token(other))
	require.False(t, csrf.Check(mine, csrf.Token(other)), "another session's token")
	require.False(t, csrf.Check(mine, ""))
	require.False(t, csrf.Check(mine, token[:len(token)-1]))
	require.False(t, csrf.Check("", csrf.Token("")))
	require.NotEqual(t, token, edge.NewCSRF(keyring("another key")).Token(mine), "the server key is part of it")
}
