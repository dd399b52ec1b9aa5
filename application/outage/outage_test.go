package outage_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/outage"
)

func TestTrackerLogsOneLinePerOutage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tr := outage.NewTracker(slog.New(slog.NewTextHandler(&buf, nil)), "claim jobs", 100*time.Millisecond, time.Second)
	require.False(t, tr.Down())

	waits := make([]time.Duration, 0, 6)
	for range 6 {
		waits = append(waits, tr.Failed(errors.New("connection refused")))
	}
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}, waits, "waits double from the base up to the ceiling")
	require.True(t, tr.Down())
	require.Equal(t, 1, strings.Count(buf.String(), "\n"), "six failures of one outage, one line:\n%s", buf.String())
	require.Contains(t, buf.String(), "connection refused")

	tr.Succeeded()
	tr.Succeeded()
	require.False(t, tr.Down())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "the end of the outage is one more line, and successes after it none")
	require.Contains(t, lines[1], "failed_attempts=6")

	require.Equal(t, 100*time.Millisecond, tr.Failed(errors.New("again")), "a new outage starts from the base")
	require.Equal(t, 3, len(strings.Split(strings.TrimSpace(buf.String()), "\n")))
}
