package rest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/cron"
)

// TestExecutionJSONInterrupted: a run whose first call a crash cut off
// keeps the existing fields' meaning (attempts counts both calls) and adds
// interrupted_attempts.
func TestExecutionJSONInterrupted(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 7, 1, 8, 1, 0, 0, time.UTC)
	e := cron.Execution{ID: "exe_1", JobID: "crn_1", Slot: slot, StartedAt: slot.Add(4 * time.Second), Status: cron.Success,
		Attempt: 2, InterruptedAttempts: 1, ResponseCode: 200}
	out := executionJSON(e)
	require.Equal(t, 2, out["attempts"])
	require.Equal(t, 1, out["interrupted_attempts"])
	require.Equal(t, cron.Success, out["status"])
	require.NotContains(t, out, "error")

	e.InterruptedAttempts, e.Attempt = 0, 1
	require.NotContains(t, executionJSON(e), "interrupted_attempts")
}
