package harness

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config is how long and how often a scenario and its baseline alternate.
type Config struct {
	// Slice is how long each side runs per round.
	Slice time.Duration
	// Rounds is the number of scenario/baseline pairs; each yields one ratio.
	Rounds int
	// Warmup is how long each side runs, unrecorded, before the first round, so
	// connections, caches and the Go runtime are warm when measuring starts.
	Warmup time.Duration
}

// Result is the outcome of one scenario. When Error is set the rates and ratios are
// left out: a number next to an error invites being quoted without it.
type Result struct {
	Scenario     string     `json:"scenario"`
	Description  string     `json:"description"`
	Baseline     string     `json:"baseline"`
	Target       float64    `json:"target_ratio"`
	Rounds       int        `json:"rounds"`
	Ratio        *Summary   `json:"ratio,omitempty"`
	Ratios       []float64  `json:"ratios,omitempty"`
	Measured     SideResult `json:"scenario_side"`
	Reference    SideResult `json:"baseline_side"`
	StealPercent float64    `json:"steal_percent"`
	Error        string     `json:"error,omitempty"`
}

// Verdict is the one-word outcome of a result for the table.
func (r Result) Verdict() string {
	switch {
	case r.Error != "":
		return "ERROR"
	case r.Ratio.Median >= r.Target:
		return "ok"
	default:
		return "BELOW TARGET"
	}
}

// SideResult is what one side, scenario or baseline, did over all rounds. Rates are
// for information only; the ratio is the result.
type SideResult struct {
	Ops          int      `json:"ops"`
	Failed       int      `json:"failed"`
	FirstFailure string   `json:"first_failure,omitempty"`
	Rate         *Summary `json:"rate_per_sec,omitempty"`
	Latency      *Latency `json:"latency,omitempty"`
}

// Latency is the spread of per-operation latencies over all of a side's rounds.
type Latency struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

// Run sets up sc and its baseline, warms both up, then runs cfg.Rounds rounds of one
// slice each and summarises the per-round ratios.
func Run(ctx context.Context, env *Env, sc Scenario, cfg Config) Result {
	res := Result{Scenario: sc.Name, Description: sc.Description, Baseline: sc.Baseline.Name, Target: sc.Target, Rounds: cfg.Rounds}
	fail := func(err error) Result {
		res.Error = err.Error()
		return res
	}
	measured, err := sc.Setup(ctx, env)
	if err != nil {
		return fail(fmt.Errorf("setup: %w", err))
	}
	reference, err := sc.Baseline.Setup(ctx, env)
	if err != nil {
		return fail(fmt.Errorf("baseline %s setup: %w", sc.Baseline.Name, err))
	}
	for _, warm := range []Slice{measured, reference} {
		if _, err := warm(ctx, cfg.Warmup); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	before, err := ReadCPUTimes()
	if err != nil {
		return fail(err)
	}
	ms, rs, err := alternate(ctx, env.Log.With("scenario", sc.Name), measured, reference, cfg)
	if err != nil {
		return fail(err)
	}
	after, err := ReadCPUTimes()
	if err != nil {
		return fail(err)
	}
	res.StealPercent = StealPercent(before, after)
	return summarize(res, ms, rs)
}

// alternate runs the rounds. The order within a round flips every round (ABBA), so
// a steady drift in machine speed does not always favour the side that runs first.
func alternate(ctx context.Context, log *slog.Logger, measured, reference Slice, cfg Config) (ms, rs []Sample, err error) {
	for i := range cfg.Rounds {
		var m, r Sample
		if i%2 == 0 {
			if m, err = measured(ctx, cfg.Slice); err == nil {
				r, err = reference(ctx, cfg.Slice)
			}
		} else {
			if r, err = reference(ctx, cfg.Slice); err == nil {
				m, err = measured(ctx, cfg.Slice)
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		ms, rs = append(ms, m), append(rs, r)
		level := slog.LevelInfo
		if m.Failed+r.Failed > 0 {
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "round", "n", i+1, "of", cfg.Rounds, "rate", int(m.Rate()), "baseline_rate", int(r.Rate()),
			"ratio", fmt.Sprintf("%.3f", ratio(m, r)), "failed", m.Failed+r.Failed)
	}
	return ms, rs, nil
}

// summarize fills res from the samples of both sides. Failures on either side turn
// the result into an error: the rate of a server answering errors is not its rate.
func summarize(res Result, ms, rs []Sample) Result {
	res.Measured, res.Reference = side(ms), side(rs)
	var errs []string
	for _, s := range []struct {
		name string
		r    SideResult
	}{{res.Scenario, res.Measured}, {res.Baseline, res.Reference}} {
		if s.r.Failed > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d of %d operations failed (first: %s)", s.name, s.r.Failed, s.r.Failed+s.r.Ops, s.r.FirstFailure))
		}
	}
	if len(errs) > 0 {
		res.Error = strings.Join(errs, "; ") + "; no rate reported"
		res.Measured.Rate, res.Measured.Latency, res.Reference.Rate, res.Reference.Latency = nil, nil, nil, nil
		return res
	}
	for i := range ms {
		if rs[i].Rate() == 0 {
			res.Error = fmt.Sprintf("round %d: baseline %s did no operations", i+1, res.Baseline)
			return res
		}
		res.Ratios = append(res.Ratios, ratio(ms[i], rs[i]))
	}
	sum := Summarize(res.Ratios)
	res.Ratio = &sum
	return res
}

func side(samples []Sample) SideResult {
	var r SideResult
	rates := make([]float64, 0, len(samples))
	for _, s := range samples {
		r.Ops += s.Ops
		r.Failed += s.Failed
		if r.FirstFailure == "" {
			r.FirstFailure = s.FirstFailure
		}
		rates = append(rates, s.Rate())
	}
	rate := Summarize(rates)
	r.Rate = &rate
	if lat := sortedLatencies(samples); len(lat) > 0 {
		r.Latency = &Latency{P50ms: millis(Percentile(lat, 50)), P99ms: millis(Percentile(lat, 99))}
	}
	return r
}

func ratio(m, r Sample) float64 {
	if r.Rate() == 0 {
		return 0
	}
	return m.Rate() / r.Rate()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
