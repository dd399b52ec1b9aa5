package harness

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixedRate returns a Slice that reports rate operations per second, and records the
// order slices ran in.
func fixedRate(name string, rate int, order *[]string) Slice {
	return func(_ context.Context, _ time.Duration) (Sample, error) {
		*order = append(*order, name)
		return Sample{Ops: rate, Elapsed: time.Second, Latencies: []time.Duration{time.Millisecond, 3 * time.Millisecond}}, nil
	}
}

func TestAlternateFlipsOrderAndSummarizesRatios(t *testing.T) {
	t.Parallel()
	var order []string
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{Slice: time.Second, Rounds: 4}
	ms, rs, err := alternate(t.Context(), log, fixedRate("s", 600, &order), fixedRate("b", 1000, &order), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ""), "sbbssbbs"; got != want {
		t.Errorf("slice order = %s, want %s", got, want)
	}
	res := summarize(Result{Scenario: "s", Baseline: "b", Target: 0.5}, ms, rs)
	if res.Error != "" {
		t.Fatalf("unexpected error: %s", res.Error)
	}
	if math.Abs(res.Ratio.Median-0.6) > 1e-9 || res.Verdict() != "ok" {
		t.Errorf("ratio %+v verdict %s, want median 0.6 and ok", *res.Ratio, res.Verdict())
	}
	if res.Measured.Rate.Median != 600 || res.Measured.Latency.P99ms != 3 {
		t.Errorf("scenario side = rate %+v latency %+v", *res.Measured.Rate, *res.Measured.Latency)
	}
}

func TestSummarizeRefusesRateWhenOperationsFailed(t *testing.T) {
	t.Parallel()
	ms := []Sample{{Ops: 500, Failed: 3, FirstFailure: "HTTP 401 Unauthorized", Elapsed: time.Second}}
	rs := []Sample{{Ops: 1000, Elapsed: time.Second}}
	res := summarize(Result{Scenario: "s", Baseline: "b", Target: 0.5}, ms, rs)
	if res.Verdict() != "ERROR" || res.Ratio != nil || res.Measured.Rate != nil {
		t.Fatalf("result with failures = %+v, want an error and no ratio or rate", res)
	}
	if !strings.Contains(res.Error, "3 of 503") || !strings.Contains(res.Error, "HTTP 401") {
		t.Errorf("error %q does not say how many failed and why", res.Error)
	}
}

// fixedLatencies returns a Slice that reports the given latencies, one operation each.
func fixedLatencies(ms ...int) Slice {
	return func(_ context.Context, d time.Duration) (Sample, error) {
		s := Sample{Ops: len(ms), Elapsed: d}
		for _, m := range ms {
			s.Latencies = append(s.Latencies, time.Duration(m)*time.Millisecond)
		}
		return s, nil
	}
}

func newTestEnv(t *testing.T, database string) *Env {
	t.Helper()
	env, err := NewEnv(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	env.Database = database
	return env
}

func TestRunLatencyScenario(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	goal := &LatencyGoal{P50: map[string]time.Duration{"sqlite": 10 * time.Millisecond}}
	cfg := Config{Slice: time.Millisecond, Rounds: 3}
	sc := Scenario{
		Name:    "lat",
		Unit:    "jobs",
		Latency: goal,
		Setup: func(context.Context, *Env) (Slice, error) {
			return fixedLatencies(1, 2, 3, 4, 100), nil
		},
		// A latency scenario has no baseline: setting one up would fail the run.
		Baseline: Baseline{Name: "unused", Setup: func(context.Context, *Env) (Slice, error) {
			t.Error("baseline of a latency scenario set up")
			return nil, nil
		}},
	}
	res := Run(t.Context(), env, sc, cfg)
	if res.Error != "" {
		t.Fatalf("unexpected error: %s", res.Error)
	}
	if res.Kind != KindLatency || res.Baseline != "" || res.Ratio != nil || res.Unit != "jobs" {
		t.Errorf("result kind %q baseline %q ratio %v unit %q, want a latency result without baseline or ratio", res.Kind, res.Baseline, res.Ratio, res.Unit)
	}
	want := Latency{Count: 15, P50ms: 3, P99ms: 100, MaxMs: 100}
	if got := *res.Measured.Latency; got != want {
		t.Errorf("overall latency = %+v, want %+v", got, want)
	}
	if len(res.LatencyRounds) != 3 || res.LatencyRounds[0] != (Latency{Count: 5, P50ms: 3, P99ms: 100, MaxMs: 100}) {
		t.Errorf("rounds = %+v, want 3 of 5 latencies each", res.LatencyRounds)
	}
	if res.TargetP50ms != 10 || res.Verdict() != "ok" {
		t.Errorf("target %v verdict %s, want 10 and ok", res.TargetP50ms, res.Verdict())
	}

	goal.P50["sqlite"] = 2 * time.Millisecond
	if res := Run(t.Context(), env, sc, cfg); res.Verdict() != "OVER TARGET" {
		t.Errorf("verdict with a p50 of 3ms against 2ms = %s, want OVER TARGET", res.Verdict())
	}
	env.Database = "postgres"
	sc.Databases = []string{"sqlite", "postgres"}
	if res := Run(t.Context(), env, sc, cfg); !strings.Contains(res.Error, "no p50 target for -database postgres") {
		t.Errorf("error without a target for the database = %q", res.Error)
	}
}

func TestSummarizeLatencyRefusesFailures(t *testing.T) {
	t.Parallel()
	ms := []Sample{
		{Ops: 2, Elapsed: time.Second, Latencies: []time.Duration{time.Millisecond, time.Millisecond}},
		{Ops: 1, Failed: 1, FirstFailure: "job 7 did not start", Elapsed: time.Second, Latencies: []time.Duration{time.Millisecond}},
	}
	res := summarizeLatency(Result{Kind: KindLatency, TargetP50ms: 5}, ms)
	if res.Verdict() != "ERROR" || res.Measured.Latency != nil || res.LatencyRounds != nil {
		t.Fatalf("result with a failure = %+v, want an error and no latency", res)
	}
	if !strings.Contains(res.Error, "1 of 4") || !strings.Contains(res.Error, "job 7") {
		t.Errorf("error %q does not say how many failed and why", res.Error)
	}
	res = summarizeLatency(Result{Kind: KindLatency}, []Sample{{Elapsed: time.Second}})
	if !strings.Contains(res.Error, "round 1 observed no latencies") {
		t.Errorf("error for a round without latencies = %q", res.Error)
	}
}

func TestRunSkipsScenarioForOtherDatabase(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	sc := Scenario{
		Name:      "pg-only",
		Databases: []string{"postgres"},
		Baseline:  Baseline{Name: "b", Unit: "tx"},
		Setup: func(context.Context, *Env) (Slice, error) {
			t.Error("set up a scenario that should be skipped")
			return nil, nil
		},
	}
	res := Run(t.Context(), env, sc, Config{Slice: time.Millisecond, Rounds: 1})
	if res.Verdict() != "skipped" || res.Error != "" {
		t.Fatalf("verdict %s error %q, want skipped without error", res.Verdict(), res.Error)
	}
	if want := "runs on -database postgres only; this run uses sqlite"; res.Skipped != want {
		t.Errorf("Skipped = %q, want %q", res.Skipped, want)
	}
}

func TestRunReleasesScenarioResourcesInReverse(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	var order []string
	sc := Scenario{
		Name:     "scoped",
		Target:   0.5,
		Baseline: Baseline{Name: "b", Setup: func(context.Context, *Env) (Slice, error) { return fixedRate("b", 10, &order), nil }},
		Setup: func(_ context.Context, env *Env) (Slice, error) {
			env.AfterScenario(func() { order = append(order, "first") })
			env.AfterScenario(func() { order = append(order, "second") })
			return fixedRate("s", 10, &order), nil
		},
	}
	res := Run(t.Context(), env, sc, Config{Slice: time.Millisecond, Rounds: 2})
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	// Warm-up (s, b), two ABBA rounds, then the releases, last registered first.
	if got, want := strings.Join(order, " "), "s b s b b s second first"; got != want {
		t.Errorf("order = %q, want %q", got, want)
	}
	env.Close()
	if n := strings.Count(strings.Join(order, " "), "first"); n != 1 {
		t.Errorf("released %d times, want once", n)
	}
}

func TestScenarioDatabaseURLOnSQLite(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	a, err := env.ScenarioDatabaseURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.ScenarioDatabaseURL(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !strings.HasPrefix(a, "sqlite:"+env.Dir) {
		t.Fatalf("URLs %q and %q, want two different files under %s", a, b, env.Dir)
	}
	dir := filepath.Dir(strings.TrimPrefix(a, "sqlite:"))
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	env.endScenario()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scenario directory still there after the scenario: %v", err)
	}
}

func TestRunFollowUpsAfterSuccessfulRoundsOnly(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	var order []string
	var seen Rounds
	sc := Scenario{
		Name:     "followed",
		Target:   0.5,
		Baseline: Baseline{Name: "b", Setup: func(context.Context, *Env) (Slice, error) { return fixedRate("b", 10, &order), nil }},
		Setup: func(_ context.Context, env *Env) (Slice, error) {
			env.AfterRounds(func(ctx context.Context, r Rounds) []Figure {
				seen = r
				if _, err := r.Baseline(ctx, time.Millisecond); err != nil {
					t.Error(err)
				}
				limit := 1.0
				return []Figure{{Name: "p99", Value: 2, Unit: "ms", Max: &limit}, {Name: "info", Value: 7}}
			})
			env.AfterRounds(func(context.Context, Rounds) []Figure {
				return []Figure{FigureError("broken", errors.New("boom"))}
			})
			env.AfterScenario(func() { order = append(order, "released") })
			return fixedRate("s", 6, &order), nil
		},
	}
	res := Run(t.Context(), env, sc, Config{Slice: time.Millisecond, Rounds: 1})
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if got, want := strings.Join(order, " "), "s b s b b released"; got != want {
		t.Errorf("order = %q, want %q: follow-ups after the rounds, before the release", got, want)
	}
	if seen.Result.Measured.Rate.Median != 6 || seen.Config.Rounds != 1 {
		t.Errorf("follow-up saw %+v, want the result and config of the rounds", seen)
	}
	if len(res.Figures) != 3 || res.Figures[0].Verdict() != "OVER TARGET" || res.Figures[1].Verdict() != "" || res.Figures[2].Verdict() != "ERROR" {
		t.Fatalf("figures = %+v, want p99 over target, info without verdict, broken as an error", res.Figures)
	}
	if !res.Failed() || res.Verdict() != "ok" {
		t.Errorf("Failed() = %v, verdict %s: a failed figure fails the run, not the ratio", res.Failed(), res.Verdict())
	}

	// A scenario whose rounds fail runs no follow-up.
	sc.Setup = func(_ context.Context, env *Env) (Slice, error) {
		env.AfterRounds(func(context.Context, Rounds) []Figure {
			t.Error("follow-up ran after failed rounds")
			return nil
		})
		return func(context.Context, time.Duration) (Sample, error) {
			return Sample{Ops: 1, Failed: 1, FirstFailure: "HTTP 500", Elapsed: time.Second}, nil
		}, nil
	}
	if res := Run(t.Context(), env, sc, Config{Slice: time.Millisecond, Rounds: 1}); res.Error == "" || res.Figures != nil {
		t.Errorf("result = %+v, want an error and no figures", res)
	}
}

// With Against set, the baseline is the scenario itself set up in the other Env
// (another build), its resources are released with the scenario's, and there is no
// target to miss.
func TestRunAgainstAnotherBuildComparesTheScenarioWithItself(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, "sqlite")
	env.SwitchboardBin = "/builds/new"
	other := newTestEnv(t, "sqlite")
	other.SwitchboardBin = "/builds/old"
	env.Against = other
	var order []string
	sc := Scenario{
		Name:   "sends",
		Target: 2,
		Unit:   "sends",
		Baseline: Baseline{Name: "pgbench", Setup: func(context.Context, *Env) (Slice, error) {
			t.Error("the scenario's own baseline was set up")
			return nil, nil
		}},
		Setup: func(_ context.Context, e *Env) (Slice, error) {
			name, rate := "new", 12
			if e == other {
				name, rate = "old", 10
			}
			e.AfterScenario(func() { order = append(order, "release "+name) })
			return fixedRate(name, rate, &order), nil
		},
	}
	res := Run(t.Context(), env, sc, Config{Slice: time.Millisecond, Rounds: 2})
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if res.Baseline != "switchboard old" || res.BaselineUnit != "sends" || res.Target != 0 {
		t.Errorf("baseline %q unit %q target %v, want switchboard old, sends and no target", res.Baseline, res.BaselineUnit, res.Target)
	}
	if math.Abs(res.Ratio.Median-1.2) > 1e-9 || res.Verdict() != "ok" {
		t.Errorf("ratio %+v verdict %s, want 1.2 and ok", *res.Ratio, res.Verdict())
	}
	if got, want := strings.Join(order, " "), "new old new old old new release old release new"; got != want {
		t.Errorf("order = %q, want %q", got, want)
	}
}

// Loads run side by side count together, over the longest of their times,
// and the first failure among them is named.
func TestConcurrentSamplesAddUp(t *testing.T) {
	got := Concurrent([]Sample{
		{Ops: 3, Elapsed: 2 * time.Second, Latencies: []time.Duration{1, 2, 3}},
		{Ops: 1, Failed: 2, FirstFailure: "HTTP 503", Elapsed: 3 * time.Second, Latencies: []time.Duration{4}},
		{Failed: 1, FirstFailure: "HTTP 500", Elapsed: time.Second},
	})
	want := Sample{Ops: 4, Failed: 3, FirstFailure: "HTTP 503", Elapsed: 3 * time.Second, Latencies: []time.Duration{1, 2, 3, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Concurrent = %+v, want %+v", got, want)
	}
}
