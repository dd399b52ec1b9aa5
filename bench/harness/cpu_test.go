package harness

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestCPUSinceCountsProcessesAliveThroughout(t *testing.T) {
	t.Parallel()
	before := map[int]time.Duration{1: time.Second, 2: 5 * time.Second}
	after := map[int]time.Duration{1: 3 * time.Second, 3: time.Second} // 2 exited, 3 started
	if got := cpuSince(after, before); got != 2*time.Second {
		t.Errorf("cpuSince = %s, want 2s", got)
	}
}

func TestCPUFigureCeilingIsTheRateThePostgresAndLoadGeneratorSharesAllow(t *testing.T) {
	t.Parallel()
	// 1000 operations: server 100 ms, Postgres 150 ms, load generator 50 ms. Were
	// the server free, each operation would take 200 µs of the machine's CPUs.
	ours := CPUUse{Server: 100 * time.Millisecond, Postgres: 150 * time.Millisecond, LoadGen: 50 * time.Millisecond, Machine: 320 * time.Millisecond}
	base := CPUUse{Machine: 250 * time.Millisecond}
	baseRate := 4000.0
	r := Rounds{Result: Result{Baseline: "pgbench-insert", Reference: SideResult{Rate: &Summary{Median: baseRate, Min: 1, Max: 9000}}}}
	f := CPUFigure("CPU per send", "send", r, ours, 1000, base, 2500)
	if f.Value != 250 || f.Unit != "µs" {
		t.Errorf("value = %v %s, want 250 µs (server + Postgres per send)", f.Value, f.Unit)
	}
	ceiling := float64(runtime.NumCPU()) * 1e6 / 200 / baseRate
	for _, want := range []string{"server process 100 µs", "Postgres processes 150 µs", "took 50 µs more", "the whole machine 320 µs", "the whole machine 100 µs per tx", fmt.Sprintf("%.2f× pgbench-insert", ceiling)} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("detail %q lacks %q", f.Detail, want)
		}
	}
}

func TestCPUFollowUpPairsAMeteredSliceWithABaselineSlice(t *testing.T) {
	t.Parallel()
	var baselineRuns int
	r := Rounds{
		Config: Config{Slice: 10 * time.Millisecond},
		Result: Result{Baseline: "pgbench-lookup", Reference: SideResult{Rate: &Summary{Median: 1000}}},
		Baseline: func(ctx context.Context, d time.Duration) (Sample, error) {
			baselineRuns++
			return Sample{Ops: 100, Elapsed: d}, nil
		},
	}
	ours := CPUUse{Server: 30 * time.Millisecond, Postgres: 20 * time.Millisecond}
	run := func(ctx context.Context, d time.Duration) (Sample, CPUUse, error) {
		return Sample{Ops: 100, Elapsed: d}, ours, nil
	}
	figs := CPUFollowUp("CPU per request", "request", run)(context.Background(), r)
	if len(figs) != 1 || figs[0].Error != "" || figs[0].Value != 500 {
		t.Fatalf("figures = %+v, want one of 500 µs (server + Postgres per request)", figs)
	}
	if baselineRuns != 1 {
		t.Errorf("baseline ran %d times, want 1", baselineRuns)
	}

	failing := func(ctx context.Context, d time.Duration) (Sample, CPUUse, error) {
		return Sample{Ops: 90, Failed: 10, FirstFailure: "500 Internal Server Error"}, ours, nil
	}
	figs = CPUFollowUp("CPU per request", "request", failing)(context.Background(), r)
	if len(figs) != 1 || !strings.Contains(figs[0].Error, "10 of 100 operations failed") {
		t.Errorf("figures = %+v, want the failures as the figure's error", figs)
	}
	if baselineRuns != 1 {
		t.Errorf("baseline ran after failed operations (%d runs), want no run", baselineRuns)
	}
}

func TestMeteredCountsTheCPUOfThisProcessAsTheLoadGenerator(t *testing.T) {
	t.Parallel()
	// The slice spins until this process has used 250 ms more CPU, however long
	// that takes on a busy machine.
	spin := func(ctx context.Context, d time.Duration) (Sample, error) {
		start, err := ProcessCPU(os.Getpid())
		if err != nil {
			return Sample{}, err
		}
		n := 0
		for ; ; n++ {
			if n%100_000 == 0 {
				now, err := ProcessCPU(os.Getpid())
				if err != nil {
					return Sample{}, err
				}
				if now-start >= 250*time.Millisecond {
					return Sample{Ops: n, Elapsed: d}, nil
				}
			}
		}
	}
	s, use, err := Metered(0, spin)(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ops == 0 || use.Server != 0 {
		t.Errorf("sample %+v, use %+v: want the slice's operations and no server time", s, use)
	}
	// Other tests run in this process too, so only lower bounds hold; the
	// machine's busy time includes this process's, to a clock tick either side.
	if use.LoadGen < 250*time.Millisecond || use.Machine < use.LoadGen-2*clockTick {
		t.Errorf("use %+v: want the spin counted as load generator and machine time", use)
	}
}

func TestCPUUseAddAndScaled(t *testing.T) {
	t.Parallel()
	u := CPUUse{Server: time.Second, Postgres: 2 * time.Second, LoadGen: 3 * time.Second, Machine: 4 * time.Second}
	want := CPUUse{Server: 1500 * time.Millisecond, Postgres: 3 * time.Second, LoadGen: 4500 * time.Millisecond, Machine: 6 * time.Second}
	if got := u.Scaled(1.5); got != want {
		t.Errorf("Scaled(1.5) = %+v, want %+v", got, want)
	}
	if got := u.Add(u); got != u.Scaled(2) {
		t.Errorf("Add = %+v, want %+v", got, u.Scaled(2))
	}
}
