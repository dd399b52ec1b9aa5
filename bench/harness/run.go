package harness

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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

// Result is the outcome of one scenario. When Error is set the rates, ratios and
// latencies are left out: a number next to an error invites being quoted without it.
type Result struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	// Kind is "ratio" or "latency" (see Scenario).
	Kind     string `json:"kind"`
	Unit     string `json:"unit"`
	Baseline string `json:"baseline,omitempty"`
	// BaselineUnit names one operation of the baseline, e.g. "tx".
	BaselineUnit string     `json:"baseline_unit,omitempty"`
	Target       float64    `json:"target_ratio,omitempty"`
	Rounds       int        `json:"rounds"`
	Ratio        *Summary   `json:"ratio,omitempty"`
	Ratios       []float64  `json:"ratios,omitempty"`
	Measured     SideResult `json:"scenario_side"`
	Reference    SideResult `json:"baseline_side,omitzero"`
	// TargetP50ms is the highest acceptable median latency of a latency scenario.
	TargetP50ms float64 `json:"target_p50_ms,omitempty"`
	// LatencyRounds is the latency spread of each round of a latency scenario; the
	// result is Measured.Latency, over all rounds.
	LatencyRounds []Latency `json:"latency_rounds,omitempty"`
	// Figures are what the scenario's follow-ups measured after the rounds.
	Figures      []Figure `json:"figures,omitempty"`
	StealPercent float64  `json:"steal_percent"`
	// Skipped says why the scenario did not run on this run's database.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Verdict is the one-word outcome of a result for the table.
func (r Result) Verdict() string {
	switch {
	case r.Skipped != "":
		return "skipped"
	case r.Error != "":
		return "ERROR"
	case r.Kind == KindLatency && r.Measured.Latency.P50ms <= r.TargetP50ms:
		return "ok"
	case r.Kind == KindLatency:
		return "OVER TARGET"
	case r.Ratio.Median >= r.Target:
		return "ok"
	default:
		return "BELOW TARGET"
	}
}

// The kinds of Result.
const (
	KindRatio   = "ratio"
	KindLatency = "latency"
)

// SideResult is what one side, scenario or baseline, did over all rounds. Rates are
// for information only; the ratio is the result.
type SideResult struct {
	Ops          int      `json:"ops"`
	Failed       int      `json:"failed"`
	FirstFailure string   `json:"first_failure,omitempty"`
	Rate         *Summary `json:"rate_per_sec,omitempty"`
	Latency      *Latency `json:"latency,omitempty"`
}

// Latency is the spread of a set of per-operation latencies: a side's over all its
// rounds, or one round's.
type Latency struct {
	Count int     `json:"count"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// latencyOf summarises sorted latencies, or returns nil when there are none.
func latencyOf(sorted []time.Duration) *Latency {
	if len(sorted) == 0 {
		return nil
	}
	return &Latency{
		Count: len(sorted),
		P50ms: millis(Percentile(sorted, 50)),
		P99ms: millis(Percentile(sorted, 99)),
		MaxMs: millis(sorted[len(sorted)-1]),
	}
}

// LatencyOf summarises latencies given in any order (it sorts a copy), or returns
// nil when there are none: for a follow-up that keeps latencies of its own.
func LatencyOf(latencies []time.Duration) *Latency {
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	return latencyOf(sorted)
}

// Run sets up sc (and the baseline of a ratio scenario), warms up, then runs
// cfg.Rounds rounds and summarises them. A scenario that cannot run on env's database
// is skipped; what its Setup registered with Env.AfterScenario is released on return.
func Run(ctx context.Context, env *Env, sc Scenario, cfg Config) Result {
	res := Result{Scenario: sc.Name, Description: sc.Description, Kind: KindRatio, Unit: sc.unit(), Rounds: cfg.Rounds}
	baseline, target := sc.Baseline, sc.Target
	if env.Against != nil {
		// Two builds compared: no target, the ratio is the answer.
		baseline, target = env.Against.asBaseline(sc), 0
	}
	if sc.Latency != nil {
		res.Kind = KindLatency
	} else {
		res.Baseline, res.BaselineUnit, res.Target = baseline.Name, baseline.unit(), target
	}
	if reason := sc.skipReason(env.Database); reason != "" {
		res.Skipped = reason
		return res
	}
	defer env.endScenario()
	if env.Against != nil {
		defer env.Against.endScenario()
	}
	fail := func(err error) Result {
		res.Error = err.Error()
		return res
	}
	if sc.Latency != nil {
		target, ok := sc.Latency.P50[env.Database]
		if !ok {
			return fail(fmt.Errorf("no p50 target for -database %s", env.Database))
		}
		res.TargetP50ms = millis(target)
	}
	measured, err := sc.Setup(ctx, env)
	if err != nil {
		return fail(fmt.Errorf("setup: %w", err))
	}
	warmups := []Slice{measured}
	var reference Slice
	if sc.Latency == nil {
		if reference, err = baseline.Setup(ctx, env); err != nil {
			return fail(fmt.Errorf("baseline %s setup: %w", baseline.Name, err))
		}
		warmups = append(warmups, reference)
	}
	for _, warm := range warmups {
		if _, err := warm(ctx, cfg.Warmup); err != nil {
			return fail(fmt.Errorf("warm-up: %w", err))
		}
	}
	before, err := ReadCPUTimes()
	if err != nil {
		return fail(err)
	}
	log := env.Log.With("scenario", sc.Name)
	var ms, rs []Sample
	if sc.Latency != nil {
		ms, err = measureRounds(ctx, log, measured, cfg)
	} else {
		ms, rs, err = alternate(ctx, log, measured, reference, cfg)
	}
	if err != nil {
		return fail(err)
	}
	after, err := ReadCPUTimes()
	if err != nil {
		return fail(err)
	}
	res.StealPercent = StealPercent(before, after)
	if sc.Latency != nil {
		res = summarizeLatency(res, ms)
	} else {
		res = summarize(res, ms, rs)
	}
	if res.Error == "" {
		for _, f := range env.followUps {
			res.Figures = append(res.Figures, f(ctx, Rounds{Config: cfg, Result: res, Baseline: reference})...)
		}
	}
	return res
}

// Failed reports whether the scenario, or a figure beside it, failed.
func (r Result) Failed() bool {
	return r.Error != "" || slices.ContainsFunc(r.Figures, func(f Figure) bool { return f.Error != "" })
}

// measureRounds runs the rounds of a latency scenario: one slice each.
func measureRounds(ctx context.Context, log *slog.Logger, measured Slice, cfg Config) ([]Sample, error) {
	var ms []Sample
	for i := range cfg.Rounds {
		m, err := measured(ctx, cfg.Slice)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		ms = append(ms, m)
		level := slog.LevelInfo
		if m.Failed > 0 {
			level = slog.LevelWarn
		}
		attrs := []any{"n", i + 1, "of", cfg.Rounds, "ops", m.Ops, "rate", fmt.Sprintf("%.1f", m.Rate()), "failed", m.Failed}
		if l := latencyOf(sortedLatencies([]Sample{m})); l != nil {
			attrs = append(attrs, "p50_ms", fmt.Sprintf("%.2f", l.P50ms), "p99_ms", fmt.Sprintf("%.2f", l.P99ms), "max_ms", fmt.Sprintf("%.2f", l.MaxMs))
		}
		log.Log(ctx, level, "round", attrs...)
	}
	return ms, nil
}

// summarizeLatency fills the result of a latency scenario. As with ratios, failed
// operations turn the result into an error: latencies of the jobs that made it say
// nothing about the ones that did not.
func summarizeLatency(res Result, ms []Sample) Result {
	res.Measured = side(ms)
	if res.Measured.Failed > 0 {
		res.Error = fmt.Sprintf("%d of %d operations failed (first: %s); no latency reported",
			res.Measured.Failed, res.Measured.Failed+res.Measured.Ops, res.Measured.FirstFailure)
		res.Measured.Rate, res.Measured.Latency = nil, nil
		return res
	}
	for i, m := range ms {
		l := latencyOf(sortedLatencies([]Sample{m}))
		if l == nil {
			res.Error = fmt.Sprintf("round %d observed no latencies", i+1)
			res.Measured.Rate, res.Measured.Latency, res.LatencyRounds = nil, nil, nil
			return res
		}
		res.LatencyRounds = append(res.LatencyRounds, *l)
	}
	return res
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
	r.Latency = latencyOf(sortedLatencies(samples))
	return r
}

func ratio(m, r Sample) float64 {
	if r.Rate() == 0 {
		return 0
	}
	return m.Rate() / r.Rate()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
