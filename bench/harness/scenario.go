// Package harness measures Switchboard against baselines on a noisy machine.
//
// A shared two-core machine drifts by 20-30% from one minute to the next, so a bare
// request rate says little. The harness therefore keeps every server up for the whole
// run, alternates each scenario with its baseline in short slices, and reports the
// per-round ratio scenario_rate/baseline_rate: drift hits both sides of a round alike
// and cancels out of the ratio.
package harness

import (
	"context"
	"time"
)

// Scenario is one thing to measure. Scenarios are registered as values; everything a
// scenario needs while it runs is created by Setup, so a registry entry carries no state.
type Scenario struct {
	// Name selects the scenario with -scenarios.
	Name string
	// Description says what is measured, for the reader of the report.
	Description string
	// Target is the lowest acceptable median ratio scenario_rate/baseline_rate.
	Target float64
	// Setup starts or reuses what the scenario talks to (see Env) and returns the
	// runner of one slice. It is called once per run, before the first round.
	Setup func(ctx context.Context, env *Env) (Slice, error)
	// Baseline is what the scenario is compared with.
	Baseline Baseline
	// Manual keeps the scenario out of the default set; it runs only when named.
	Manual bool
}

// Baseline is a named reference workload whose rate is the denominator of a
// scenario's ratio. Baselines are built by HelloWorld and PGBench.Baseline.
type Baseline struct {
	// Name identifies the baseline in reports.
	Name string
	// Setup prepares the baseline once per scenario and returns the runner of one slice.
	Setup func(ctx context.Context, env *Env) (Slice, error)
}

// Slice runs a workload for about d and reports what it measured. An error means the
// slice could not run at all; operations that ran and failed go in Sample.Failed.
type Slice func(ctx context.Context, d time.Duration) (Sample, error)

// Sample is what one slice measured.
type Sample struct {
	// Ops counts successful operations: 2xx responses, committed transactions.
	Ops int
	// Failed counts operations that did not succeed. Any failure invalidates the
	// scenario's result, because a rate that includes fast errors means nothing.
	Failed int
	// FirstFailure describes one failure so the report can say what went wrong.
	FirstFailure string
	// Elapsed is the wall time Ops took.
	Elapsed time.Duration
	// Latencies holds the latency of each successful operation, when the runner
	// can observe them (the HTTP load generator can, pgbench cannot).
	Latencies []time.Duration
}

// Rate is successful operations per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}
