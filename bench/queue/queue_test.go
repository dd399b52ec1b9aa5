package queue

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

func TestTopUpTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		min     int
		fastest float64
		d       time.Duration
		want    int
	}{
		{"nothing measured yet", 100_000, 0, 3 * time.Second, 100_000},
		{"slow queue keeps the minimum", 100_000, 10_000, 3 * time.Second, 100_000},
		{"fast queue gets twice a slice's worth", 100_000, 60_000, 3 * time.Second, 360_000},
		{"rounds up", 0, 0.3, time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := topUpTarget(tc.min, tc.fastest, tc.d); got != tc.want {
				t.Errorf("topUpTarget(%d, %v, %s) = %d, want %d", tc.min, tc.fastest, tc.d, got, tc.want)
			}
		})
	}
}

func TestLatenciesPairsCommitsWithStarts(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	commits := map[string]time.Time{"m1": t0, "m2": t0, "m3": t0, "m4": t0, "m5": t0}
	starts := map[string]time.Time{
		"m1": t0.Add(3 * time.Millisecond),
		"m2": t0.Add(-time.Millisecond), // started before the producer saw the answer
		"m4": t0.Add(time.Second),
		"m9": t0, // another slice's job
	}
	lat, missing := latencies(commits, starts)
	slices.Sort(lat)
	if want := []time.Duration{0, 3 * time.Millisecond, time.Second}; !slices.Equal(lat, want) {
		t.Errorf("latencies = %v, want %v", lat, want)
	}
	if want := []string{"m3", "m5"}; !slices.Equal(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
}

func TestAbsentMessagesAreValidIDs(t *testing.T) {
	t.Parallel()
	if got, want := absentMessage("i"), "'msg_' || lpad((i)::text, 26, 'z')"; got != want {
		t.Errorf("absentMessage = %s, want %s", got, want)
	}
}

// The slices run end to end against a switchboard binary built once for the
// package: queue-latency on SQLite, the Postgres scenarios when DATABASE_URL names
// a server (scripts/with-postgres sets it).

var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "switchboard-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := harness.FindRoot()
	if built := os.Getenv("SWITCHBOARD_TEST_BINARY"); built != "" {
		// make test built the binary once for every package that runs it.
		binary = built
	} else if err == nil {
		binary = filepath.Join(dir, "switchboard")
		err = harness.BuildSwitchboard(context.Background(), root, binary)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func testEnv(t *testing.T, database string) *harness.Env {
	t.Helper()
	env, err := harness.NewEnv(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	env.Database, env.SwitchboardBin = database, binary
	if database == "postgres" {
		env.PostgresAdminURL = os.Getenv("DATABASE_URL")
		if env.PostgresAdminURL == "" {
			t.Fatal("DATABASE_URL is not set: run with scripts/with-postgres (make test does)")
		}
	}
	return env
}

func TestLatencySliceMeasuresEveryJob(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "sqlite")
	l := Latency{Interval: 10 * time.Millisecond, StartTimeout: 5 * time.Second}
	slice, err := l.Setup(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	s, err := slice(t.Context(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ops < 10 || s.Failed != 0 || len(s.Latencies) != s.Ops {
		t.Errorf("sample ops=%d failed=%d (%s) latencies=%d, want one latency per job and no failures", s.Ops, s.Failed, s.FirstFailure, len(s.Latencies))
	}
	for _, d := range s.Latencies {
		if d < 0 || d > 5*time.Second {
			t.Errorf("latency %s out of range", d)
		}
	}
}

func TestDrainSliceCountsRecordedCompletions(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "postgres")
	d := Drain{Workers: 100, MaxConns: 4, MinPending: 20_000, Settle: 100 * time.Millisecond}
	slice, err := d.Setup(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := slice(t.Context(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ops == 0 || s.Failed != 0 || s.Elapsed < time.Second {
			t.Errorf("sample = %+v, want completions and no failures over at least the slice", s)
		}
	}
}

func TestEnqueueSliceCountsCommittedJobs(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "postgres")
	e := Enqueue{Producers: 4, MaxConns: 4, Warm: 100 * time.Millisecond, TruncateAbove: 10}
	slice, err := e.Setup(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second slice starts on emptied tables
		s, err := slice(t.Context(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ops == 0 || s.Failed != 0 {
			t.Errorf("sample = %+v, want committed jobs and no failures", s)
		}
	}
	if _, err := (Enqueue{Producers: 8}).Setup(t.Context(), env); err == nil {
		t.Error("Setup accepted a server without a pool")
	}
}
