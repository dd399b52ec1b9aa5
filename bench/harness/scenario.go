// Package harness measures Switchboard against baselines on a noisy machine.
//
// A shared two-core machine drifts by 20-30% from one minute to the next, so a bare
// request rate says little. The harness therefore keeps every server up for the whole
// run, alternates each scenario with its baseline in short slices, and reports the
// per-round ratio scenario_rate/baseline_rate: drift hits both sides of a round alike
// and cancels out of the ratio.
//
// Some things have no baseline to divide by, such as the time a committed job waits
// for its handler. Those are latency scenarios: their result is a latency percentile
// against an absolute target, which the machine's drift does move, so their report
// shows the spread of the rounds beside it.
package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario is one thing to measure. Scenarios are registered as values; everything a
// scenario needs while it runs is created by Setup, so a registry entry carries no state.
//
// A scenario is judged one of two ways. A ratio scenario (the usual kind) alternates
// with its Baseline and is judged by the median per-round ratio against Target. A
// latency scenario (Latency set) has no baseline: each round runs one slice, and the
// scenario is judged by the median of every latency its slices observed.
type Scenario struct {
	// Name selects the scenario with -scenarios.
	Name string
	// Description says what is measured, for the reader of the report.
	Description string
	// Target is the lowest acceptable median ratio scenario_rate/baseline_rate of a
	// ratio scenario.
	Target float64
	// Latency, when set, makes this a latency scenario; Target and Baseline are then
	// unused.
	Latency *LatencyGoal
	// Unit names one operation in reports, e.g. "jobs"; "ops" when empty.
	Unit string
	// Databases lists the -database values the scenario can run on; empty means any.
	// On another database the scenario is skipped, and the report says why.
	Databases []string
	// Setup starts or reuses what the scenario talks to (see Env) and returns the
	// runner of one slice. It is called once per run, before the first round; what it
	// registers with Env.AfterScenario is released when the scenario ends.
	Setup func(ctx context.Context, env *Env) (Slice, error)
	// Baseline is what a ratio scenario is compared with.
	Baseline Baseline
	// Manual keeps the scenario out of the default set; it runs only when named.
	Manual bool
}

// LatencyGoal is the target of a latency scenario.
type LatencyGoal struct {
	// P50 is the highest acceptable median latency, by database ("sqlite",
	// "postgres"). A latency scenario must name a target for each of its Databases.
	P50 map[string]time.Duration
}

// skipReason says why sc cannot run on database, or "" when it can.
func (sc Scenario) skipReason(database string) string {
	if len(sc.Databases) == 0 || slices.Contains(sc.Databases, database) {
		return ""
	}
	return fmt.Sprintf("runs on -database %s only; this run uses %s", strings.Join(sc.Databases, " or "), database)
}

func (sc Scenario) unit() string { return cmp.Or(sc.Unit, "ops") }

func (b Baseline) unit() string { return cmp.Or(b.Unit, "ops") }

// Baseline is a named reference workload whose rate is the denominator of a
// scenario's ratio. Baselines are built by HelloWorld and PGBench.Baseline.
type Baseline struct {
	// Name identifies the baseline in reports.
	Name string
	// Unit names one operation in reports, e.g. "tx"; "ops" when empty.
	Unit string
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
