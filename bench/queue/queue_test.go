package queue

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
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
	commits := map[int64]time.Time{1: t0, 2: t0, 3: t0, 4: t0, 5: t0}
	starts := map[int64]time.Time{
		1: t0.Add(3 * time.Millisecond),
		2: t0.Add(-time.Millisecond), // started before the producer saw Transact return
		4: t0.Add(time.Second),
		9: t0, // another slice's job
	}
	lat, missing := latencies(commits, starts)
	slices.Sort(lat)
	if want := []time.Duration{0, 3 * time.Millisecond, time.Second}; !slices.Equal(lat, want) {
		t.Errorf("latencies = %v, want %v", lat, want)
	}
	if want := []int64{3, 5}; !slices.Equal(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
}

func TestStartTimesAwait(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	s := &startTimes{m: map[int64]time.Time{}}
	s.note(1, t0)
	s.note(1, t0.Add(time.Hour)) // a re-run keeps the first start
	go s.note(2, t0.Add(time.Millisecond))
	commits := map[int64]time.Time{1: t0, 2: t0}
	got, err := s.await(t.Context(), commits, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].Equal(t0) {
		t.Fatalf("await = %v, want both jobs with job 1's first start", got)
	}
	if len(s.m) != 0 {
		t.Errorf("await left %d start times behind, want none", len(s.m))
	}

	start := time.Now()
	got, err = s.await(t.Context(), map[int64]time.Time{3: t0}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || time.Since(start) < 20*time.Millisecond {
		t.Errorf("await of a job that never starts = %v after %s, want nothing after the timeout", got, time.Since(start))
	}
}

func TestSampleAddsTallies(t *testing.T) {
	t.Parallel()
	tallies := make([]tally, 3)
	tallies[0].add(nil)
	tallies[0].add(nil)
	tallies[1].add(errors.New("deadlock detected"))
	tallies[1].add(errors.New("later"))
	tallies[2].add(nil)
	s := sample(tallies, time.Second)
	if s.Ops != 3 || s.Failed != 2 || s.FirstFailure != "deadlock detected" || s.Rate() != 3 {
		t.Errorf("sample = %+v, want 3 ops, 2 failures, the first failure's text", s)
	}
}

// The slices run end to end on SQLite; the Postgres runs are `go run ./bench`'s.

func sqliteEnv(t *testing.T) *harness.Env {
	t.Helper()
	env, err := harness.NewEnv(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	env.Database = "sqlite"
	return env
}

func TestDrainSliceCountsRecordedCompletions(t *testing.T) {
	t.Parallel()
	env := sqliteEnv(t)
	d := Drain{Runner: runner.Config{Workers: 100, ClaimBatch: 100}, MaxConns: 4, MinPending: 50000}
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

func TestEnqueueSliceCountsCommits(t *testing.T) {
	t.Parallel()
	env := sqliteEnv(t)
	e := Enqueue{Producers: 4, MaxConns: 4, TruncateAbove: 10}
	slice, err := e.Setup(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second slice starts on a truncated table
		s, err := slice(t.Context(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ops == 0 || s.Failed != 0 {
			t.Errorf("sample = %+v, want commits and no failures", s)
		}
	}
	if _, err := (Enqueue{Producers: 8, MaxConns: 4}).Setup(t.Context(), env); err == nil {
		t.Error("Setup accepted fewer connections than producers")
	}
}

func TestLatencySliceMeasuresEveryJob(t *testing.T) {
	t.Parallel()
	env := sqliteEnv(t)
	l := Latency{Interval: 5 * time.Millisecond, StartTimeout: 5 * time.Second}
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
