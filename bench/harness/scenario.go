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
// scenario is judged by the median of every latency its slices observed. Either kind
// may register follow-ups (Env.AfterRounds) whose figures are reported beside its
// result.
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

// FollowUp is work a scenario registers with Env.AfterRounds during Setup and the
// harness runs after the scenario's rounds, if they succeeded: measurements that
// qualify the result without being it, such as the latency at a fixed offered rate or
// the WAL syncs per operation. It returns the figures reported beside the result; a
// figure it could not measure carries its error instead of a value.
type FollowUp func(ctx context.Context, r Rounds) []Figure

// Rounds is what a follow-up learns from the rounds before it.
type Rounds struct {
	// Config is the run's.
	Config Config
	// Result is the scenario's result so far, with its rates, ratios or latencies.
	Result Result
	// Baseline runs one slice of the scenario's baseline, for a follow-up that
	// pairs a measurement of its own with one; nil for a latency scenario.
	Baseline Slice
}

// Figure is a number reported beside a scenario's result. Most are for information;
// one with a Max has a target of its own and a verdict, which leaves the scenario's
// verdict alone.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	// Max, when set, is the highest acceptable Value.
	Max *float64 `json:"max,omitempty"`
	// Detail says how the figure was measured and what qualifies it.
	Detail string `json:"detail,omitempty"`
	// Error says why the figure could not be measured; Value is then meaningless.
	Error string `json:"error,omitempty"`
}

// Verdict is "ok" or "OVER TARGET" for a figure with a Max, "ERROR" for one that
// could not be measured, and "" otherwise.
func (f Figure) Verdict() string {
	switch {
	case f.Error != "":
		return "ERROR"
	case f.Max == nil:
		return ""
	case f.Value <= *f.Max:
		return "ok"
	default:
		return "OVER TARGET"
	}
}

// FigureError is the figure of a measurement that failed.
func FigureError(name string, err error) Figure { return Figure{Name: name, Error: err.Error()} }

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

// Concurrent is one sample of loads that ran side by side in a slice: their
// operations, failures (the first one named) and latencies together, over
// the longest of their times.
func Concurrent(samples []Sample) Sample {
	var all Sample
	for _, s := range samples {
		all.Ops += s.Ops
		all.Failed += s.Failed
		if all.FirstFailure == "" {
			all.FirstFailure = s.FirstFailure
		}
		all.Elapsed = max(all.Elapsed, s.Elapsed)
		all.Latencies = append(all.Latencies, s.Latencies...)
	}
	return all
}

// Rate is successful operations per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}
