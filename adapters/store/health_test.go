package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// A server slow to accept connections (a loaded machine forking backends)
// is not a server that is away: once a connection is made, /readyz says
// ready. A probe cut off after its one-second verdict threw each
// half-made connection away and kept the server unready for as long as
// connecting took longer than that.
func TestReadinessReturnsWhileConnectingIsSlow(t *testing.T) {
	t.Parallel()
	db, proxy, _ := openBehindProxy(t, store.Options{MaxConns: 4})
	db.WatchHealth(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ready := func() bool {
		// Until the watcher's first verdict, Ready probes on the caller's
		// context, which must therefore end.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return db.Ready(ctx) == nil
	}
	require.Eventually(t, ready, 10*time.Second, 20*time.Millisecond)

	proxy.SetConnectDelay(1500 * time.Millisecond)
	proxy.Freeze()
	require.Eventually(t, func() bool { return !ready() }, 5*time.Second, 20*time.Millisecond, "not-ready while frozen")
	proxy.Cut() // the probe must connect again, slowly
	proxy.Thaw()
	require.Eventually(t, ready, 10*time.Second, 20*time.Millisecond, "ready once a slow connection is made")
}
