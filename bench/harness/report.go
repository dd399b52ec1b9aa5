package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a whole run: the machine it ran on, how it ran, and one Result per
// scenario. It is printed as a table and optionally written as JSON.
type Report struct {
	Date         time.Time `json:"date"`
	GoVersion    string    `json:"go_version"`
	NProc        int       `json:"nproc"`
	CPUModel     string    `json:"cpu_model"`
	Database     string    `json:"database"`
	SliceSeconds float64   `json:"slice_seconds"`
	Rounds       int       `json:"rounds"`
	Workers      int       `json:"workers"`
	StealPercent float64   `json:"steal_percent"`
	Results      []Result  `json:"results"`
}

// NewReport describes this machine and run configuration; results are added as the
// scenarios finish.
func NewReport(env *Env, cfg Config) *Report {
	return &Report{
		Date:         time.Now(),
		GoVersion:    runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		NProc:        runtime.NumCPU(),
		CPUModel:     CPUModel(),
		Database:     env.Database,
		SliceSeconds: cfg.Slice.Seconds(),
		Rounds:       cfg.Rounds,
		Workers:      env.Workers,
	}
}

// WriteHeader prints what a reader needs to judge the numbers that follow.
func (r *Report) WriteHeader(w io.Writer) {
	fmt.Fprintf(w, "date      %s\n", r.Date.Format(time.RFC3339))
	fmt.Fprintf(w, "go        %s\n", r.GoVersion)
	fmt.Fprintf(w, "nproc     %d\n", r.NProc)
	fmt.Fprintf(w, "cpu       %s\n", r.CPUModel)
	fmt.Fprintf(w, "database  %s\n", r.Database)
	fmt.Fprintf(w, "method    %d rounds of %gs scenario / %gs baseline slices, %d HTTP workers; result = per-round ratio scenario_rate/baseline_rate\n",
		r.Rounds, r.SliceSeconds, r.SliceSeconds, r.Workers)
	fmt.Fprintf(w, "          latency scenarios: %d rounds of one %gs slice, no baseline; result = p50 of all rounds' latencies\n",
		r.Rounds, r.SliceSeconds)
	if r.Rounds < 10 {
		fmt.Fprintf(w, "warning   fewer than 10 rounds: the ratio is indicative only\n")
	}
	fmt.Fprintln(w)
}

// WriteTable prints one row per ratio scenario, then one per latency scenario, the
// absolute rates for information, the skipped scenarios and why, then every error in
// full: a scenario that failed shows no numbers, only why.
func (r *Report) WriteTable(w io.Writer) {
	var ratios, latencies, skipped []Result
	for _, res := range r.Results {
		switch {
		case res.Skipped != "":
			skipped = append(skipped, res)
		case res.Kind == KindLatency:
			latencies = append(latencies, res)
		default:
			ratios = append(ratios, res)
		}
	}
	if len(ratios) > 0 {
		writeRatioTable(w, ratios)
	}
	if len(latencies) > 0 {
		if len(ratios) > 0 {
			fmt.Fprintln(w)
		}
		writeLatencyTable(w, latencies)
	}
	writeRates(w, r.Results)
	writeFigures(w, r.Results)
	if len(skipped) > 0 {
		fmt.Fprintln(w, "\nskipped:")
		for _, res := range skipped {
			fmt.Fprintf(w, "  %s: %s\n", res.Scenario, res.Skipped)
		}
	}
	fmt.Fprintf(w, "\nCPU steal over the whole run: %.1f%%\n", r.StealPercent)
	for _, res := range r.Results {
		if res.Error != "" {
			fmt.Fprintf(w, "\n!!! %s FAILED: %s\n", res.Scenario, res.Error)
		}
		for _, f := range res.Figures {
			if f.Error != "" {
				fmt.Fprintf(w, "\n!!! %s: %s FAILED: %s\n", res.Scenario, f.Name, f.Error)
			}
		}
	}
}

// writeFigures prints the figures measured after the rounds, under their scenario.
func writeFigures(w io.Writer, results []Result) {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	n := 0
	for _, res := range results {
		for _, f := range res.Figures {
			if n == 0 {
				fmt.Fprintln(tw, "\nmeasured after the rounds, beside the results:")
			}
			n++
			value, target := "-", ""
			if f.Error == "" {
				value = strings.TrimSpace(formatValue(f.Value) + " " + f.Unit)
			}
			if f.Max != nil {
				target = strings.TrimSpace("≤ " + formatValue(*f.Max) + " " + f.Unit)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", res.Scenario, f.Name, value, target, f.Verdict(), f.Detail)
		}
	}
	_ = tw.Flush()
	// Empty cells at the end of a line leave padding behind.
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// formatValue prints a figure with three significant digits, or as a whole number
// when it is 100 or more.
func formatValue(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func writeRatioTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tBASELINE\tRATIO\tMIN\tMAX\tTARGET\tRESULT\tRATE/s\tBASE RATE/s\tP50\tP99\tBASE P50\tBASE P99\tSTEAL")
	for _, res := range results {
		if res.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t≥ %.2f\t%s\t-\t-\t-\t-\t-\t-\t-\n", res.Scenario, res.Baseline, res.Target, res.Verdict())
			continue
		}
		mp50, mp99 := latencies(res.Measured.Latency)
		bp50, bp99 := latencies(res.Reference.Latency)
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t≥ %.2f\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%.1f%%\n",
			res.Scenario, res.Baseline, res.Ratio.Median, res.Ratio.Min, res.Ratio.Max, res.Target, res.Verdict(),
			res.Measured.Rate.Median, res.Reference.Rate.Median, mp50, mp99, bp50, bp99, res.StealPercent)
	}
	_ = tw.Flush()
}

func writeLatencyTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LATENCY SCENARIO\tP50\tP99\tMAX\tTARGET P50\tRESULT\tROUND P50 MIN\tROUND P50 MAX\tROUND P99 MAX\tCOUNT\tSTEAL")
	for _, res := range results {
		if res.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t≤ %s\t%s\t-\t-\t-\t-\t-\n", res.Scenario, ms(res.TargetP50ms), res.Verdict())
			continue
		}
		l := res.Measured.Latency
		p50s, p99s := make([]float64, len(res.LatencyRounds)), make([]float64, len(res.LatencyRounds))
		for i, round := range res.LatencyRounds {
			p50s[i], p99s[i] = round.P50ms, round.P99ms
		}
		rp50, rp99 := Summarize(p50s), Summarize(p99s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t≤ %s\t%s\t%s\t%s\t%s\t%d\t%.1f%%\n",
			res.Scenario, ms(l.P50ms), ms(l.P99ms), ms(l.MaxMs), ms(res.TargetP50ms), res.Verdict(),
			ms(rp50.Min), ms(rp50.Max), ms(rp99.Max), l.Count, res.StealPercent)
	}
	_ = tw.Flush()
}

// writeRates prints each side's absolute rate with its unit. Rates drift with the
// machine, so they are for information: the ratio or the latency is the result.
func writeRates(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	n := 0
	for _, res := range results {
		if res.Error != "" || res.Measured.Rate == nil {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nrates per second, median (min-max) of the rounds, for information only:")
		}
		n++
		fmt.Fprintf(tw, "  %s\t%s", res.Scenario, rate(*res.Measured.Rate, res.Unit))
		if res.Reference.Rate != nil {
			fmt.Fprintf(tw, "\t%s\t%s", res.Baseline, rate(*res.Reference.Rate, res.BaselineUnit))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

func rate(s Summary, unit string) string {
	if s.Median < 100 {
		return fmt.Sprintf("%.1f %s/s (%.1f-%.1f)", s.Median, unit, s.Min, s.Max)
	}
	return fmt.Sprintf("%.0f %s/s (%.0f-%.0f)", s.Median, unit, s.Min, s.Max)
}

func ms(v float64) string { return fmt.Sprintf("%.2fms", v) }

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// latencies formats p50 and p99, or dashes when the runner could not observe latency
// (pgbench).
func latencies(l *Latency) (p50, p99 string) {
	if l == nil {
		return "-", "-"
	}
	return ms(l.P50ms), ms(l.P99ms)
}
