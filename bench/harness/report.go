package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
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
	if r.Rounds < 10 {
		fmt.Fprintf(w, "warning   fewer than 10 rounds: the ratio is indicative only\n")
	}
	fmt.Fprintln(w)
}

// WriteTable prints one row per scenario, then every error in full: a scenario that
// failed shows no numbers, only why.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tBASELINE\tRATIO\tMIN\tMAX\tTARGET\tRESULT\tRATE/s\tBASE RATE/s\tP50\tP99\tBASE P50\tBASE P99\tSTEAL")
	for _, res := range r.Results {
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
	fmt.Fprintf(w, "\nCPU steal over the whole run: %.1f%%\n", r.StealPercent)
	for _, res := range r.Results {
		if res.Error != "" {
			fmt.Fprintf(w, "\n!!! %s FAILED: %s\n", res.Scenario, res.Error)
		}
	}
}

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
	return fmt.Sprintf("%.2fms", l.P50ms), fmt.Sprintf("%.2fms", l.P99ms)
}
