package harness

import (
	"strings"
	"testing"
)

func TestWriteTableSeparatesKinds(t *testing.T) {
	t.Parallel()
	r := &Report{Results: []Result{
		{
			Scenario: "queue-drain", Kind: KindRatio, Unit: "jobs", Baseline: "pgbench-insert", BaselineUnit: "tx", Target: 3,
			Ratio:     &Summary{Median: 3.1, Min: 2.9, Max: 3.3},
			Measured:  SideResult{Rate: &Summary{Median: 60000, Min: 58000, Max: 62000}},
			Reference: SideResult{Rate: &Summary{Median: 19000, Min: 18000, Max: 20000}},
		},
		{
			Scenario: "queue-latency", Kind: KindLatency, Unit: "jobs", TargetP50ms: 20,
			Measured:      SideResult{Rate: &Summary{Median: 99.5, Min: 99.4, Max: 99.7}, Latency: &Latency{Count: 900, P50ms: 1.2, P99ms: 4.5, MaxMs: 9}},
			LatencyRounds: []Latency{{P50ms: 1.1, P99ms: 3}, {P50ms: 1.4, P99ms: 5}},
		},
		{Scenario: "queue-enqueue", Kind: KindRatio, Baseline: "pgbench-insert", Skipped: "runs on -database postgres only; this run uses sqlite"},
		{Scenario: "broken", Kind: KindLatency, Unit: "jobs", TargetP50ms: 100, Error: "setup: boom",
			Measured: SideResult{Rate: &Summary{Median: 5}}},
	}}
	var b strings.Builder
	r.WriteTable(&b)
	out := b.String()
	for _, want := range []string{
		"queue-drain  pgbench-insert  3.10   2.90  3.30  ≥ 3.00  ok",
		"LATENCY SCENARIO",
		"queue-latency     1.20ms  4.50ms  9.00ms  ≤ 20.00ms   ok      1.10ms         1.40ms         5.00ms         900",
		"broken            -       -       -       ≤ 100.00ms  ERROR",
		"queue-drain    60000 jobs/s (58000-62000)  pgbench-insert  19000 tx/s (18000-20000)",
		"queue-latency  99.5 jobs/s (99.4-99.7)",
		"skipped:\n  queue-enqueue: runs on -database postgres only; this run uses sqlite",
		"!!! broken FAILED: setup: boom",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "broken  5") || strings.Count(out, "queue-enqueue") != 1 {
		t.Errorf("a failed or skipped scenario shows numbers or a table row:\n%s", out)
	}
}

func TestWriteTableShowsFigures(t *testing.T) {
	t.Parallel()
	twenty := 20.0
	r := &Report{Results: []Result{{
		Scenario: "messages-send", Kind: KindRatio, Unit: "sends", Baseline: "pgbench-insert", BaselineUnit: "tx", Target: 1,
		Ratio:     &Summary{Median: 0.1, Min: 0.1, Max: 0.1},
		Measured:  SideResult{Rate: &Summary{Median: 1500, Min: 1500, Max: 1500}},
		Reference: SideResult{Rate: &Summary{Median: 15000, Min: 15000, Max: 15000}},
		Figures: []Figure{
			{Name: "open-loop p99", Value: 12.345, Unit: "ms", Max: &twenty, Detail: "over 9000 sends"},
			{Name: "statements per send", Value: 7.02},
			{Name: "CPU per send", Value: 1234.5, Unit: "µs"},
			{Name: "WAL syncs", Error: "pg_stat_wal: no such view"},
		},
	}}}
	var b strings.Builder
	r.WriteTable(&b)
	out := b.String()
	for _, want := range []string{
		"measured after the rounds, beside the results:\n" +
			"  messages-send  open-loop p99        12.3 ms  ≤ 20 ms  ok     over 9000 sends\n" +
			"  messages-send  statements per send  7.02\n" +
			"  messages-send  CPU per send         1234 µs\n" +
			"  messages-send  WAL syncs            -                 ERROR\n",
		"!!! messages-send: WAL syncs FAILED: pg_stat_wal: no such view",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !r.Results[0].Failed() {
		t.Error("a result with a failed figure is not Failed")
	}
}
