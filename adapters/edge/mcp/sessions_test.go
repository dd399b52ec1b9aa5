package mcp

import (
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// connected is a server session over an in-memory transport, its client
// connected.
func connected(t *testing.T) *sdk.ServerSession {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "test"}, nil)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return ss
}

// A session whose request gave its place back before the session was
// opened (its client went away during initialize) is closed rather than
// kept beyond the cap; a reserved place is opened once.
func TestOpenNeedsAReservedPlace(t *testing.T) {
	t.Parallel()
	s := newSessions()
	late := s.reserve("acc_a", 1)
	require.NotNil(t, late)
	require.Nil(t, s.reserve("acc_a", 1), "the cap is taken")
	s.release(late)

	ss := connected(t)
	s.open(ss, late)
	ended := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the session without a place is still open")
	}
	require.Empty(t, s.byID)
	require.Zero(t, s.held["acc_a"])

	sl := s.reserve("acc_a", 1)
	require.NotNil(t, sl, "the released place is free again")
	kept := connected(t)
	s.open(kept, sl)
	s.release(sl)
	require.Len(t, s.byID, 1, "an opened place is not given back with its request")
	require.Equal(t, 1, s.held["acc_a"])
}
