package keyring_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
)

func newKeyring(t *testing.T, seed byte) *keyring.Keyring {
	t.Helper()
	k, err := keyring.New(bytes.Repeat([]byte{seed}, 32))
	require.NoError(t, err)
	return k
}

func TestNewRejectsShortKeys(t *testing.T) {
	t.Parallel()
	_, err := keyring.New(make([]byte, 31))
	require.Error(t, err)
}

func TestHashIsKeyedAndPurposeSeparated(t *testing.T) {
	t.Parallel()
	a, b := newKeyring(t, 1), newKeyring(t, 2)
	require.True(t, bytes.Equal(a.Hash("api-key", "x"), a.Hash("api-key", "x")))
	require.False(t, bytes.Equal(a.Hash("api-key", "x"), b.Hash("api-key", "x")), "another server key must hash differently")
	require.False(t, bytes.Equal(a.Hash("api-key", "x"), a.Hash("api-secret", "x")), "purposes must not collide")
	require.False(t, bytes.Equal(a.Hash("api-key", "x"), a.Hash("api-key", "y")))
}

func TestSealRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	k := newKeyring(t, 1)
	sealed := k.Seal([]byte(`{"bot_token":"123:abc"}`), "num_1")
	require.NotContains(t, string(sealed), "123:abc")

	plain, err := k.Open(sealed, "num_1")
	require.NoError(t, err)
	require.Equal(t, `{"bot_token":"123:abc"}`, string(plain))

	_, err = k.Open(sealed, "num_2")
	require.ErrorIs(t, err, keyring.ErrSealBroken, "another context must not open it")
	_, err = newKeyring(t, 2).Open(sealed, "num_1")
	require.ErrorIs(t, err, keyring.ErrSealBroken, "another server key must not open it")
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	_, err = k.Open(flipped, "num_1")
	require.ErrorIs(t, err, keyring.ErrSealBroken)
	_, err = k.Open(sealed[:5], "num_1")
	require.ErrorIs(t, err, keyring.ErrSealBroken)
}
