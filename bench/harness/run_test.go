package harness

import (
	"context"
	"io"
	"log/slog"
	"math"
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
