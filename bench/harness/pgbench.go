package harness

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PGBench is a baseline for database-bound scenarios: what Postgres itself sustains for
// the statement a Switchboard endpoint boils down to, driven by pgbench with as many
// clients as the scenario's load generator has workers. It needs -database postgres
// and runs against the run's own database (see Env.PostgresURL).
type PGBench struct {
	// Name identifies the baseline in reports, e.g. "pgbench-insert".
	Name string
	// Init is SQL run once through psql before the first slice, e.g. to create the
	// table Script writes to. Optional.
	Init string
	// Script is the pgbench script (SQL with pgbench's \set meta-commands).
	Script string
	// Clients is the number of concurrent pgbench clients (-c).
	Clients int
}

// Baseline returns the baseline that runs p. pgbench counts in whole seconds, so a
// slice lasts its duration rounded up to a second.
func (p PGBench) Baseline() Baseline {
	return Baseline{Name: p.Name, Unit: "tx", Setup: p.setup}
}

// prepare runs Init and writes Script to a file, returning the database URL and the
// script's path.
func (p PGBench) prepare(ctx context.Context, env *Env) (url, script string, err error) {
	if env.Database != "postgres" {
		return "", "", fmt.Errorf("baseline %s needs -database postgres", p.Name)
	}
	if _, err := exec.LookPath("pgbench"); err != nil {
		return "", "", fmt.Errorf("baseline %s: %w", p.Name, err)
	}
	if url, err = env.PostgresURL(ctx); err != nil {
		return "", "", err
	}
	if p.Init != "" {
		if err := psql(ctx, url, p.Init); err != nil {
			return "", "", fmt.Errorf("baseline %s init: %w", p.Name, err)
		}
	}
	script = filepath.Join(env.Dir, p.Name+".sql")
	if err := os.WriteFile(script, []byte(p.Script), 0o600); err != nil {
		return "", "", fmt.Errorf("baseline %s: %w", p.Name, err)
	}
	return url, script, nil
}

func (p PGBench) setup(ctx context.Context, env *Env) (Slice, error) {
	url, script, err := p.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d time.Duration) (Sample, error) {
		secs := max(1, int(math.Ceil(d.Seconds())))
		out, err := p.run(ctx, url, script, secs)
		if err != nil {
			return Sample{}, err
		}
		r, err := ParsePGBench(out)
		if err != nil {
			return Sample{}, err
		}
		s := Sample{Ops: r.Processed, Failed: r.Failed, Elapsed: time.Duration(secs) * time.Second}
		if r.TPS > 0 {
			// Elapsed is chosen so Rate() is pgbench's tps without connection set-up.
			s.Elapsed = time.Duration(float64(r.Processed) / r.TPS * float64(time.Second))
		}
		if r.Failed > 0 {
			s.FirstFailure = fmt.Sprintf("pgbench reported %d failed transactions", r.Failed)
		}
		return s, nil
	}, nil
}

// PGBenchResult is what the harness reads from pgbench's summary.
type PGBenchResult struct {
	// TPS excludes connection set-up, which a long-running server does not pay.
	TPS       float64
	Processed int
	Failed    int
}

// ParsePGBench reads pgbench's summary. It understands both the "(without initial
// connection time)" line of pgbench 14+ and the older "(excluding connections
// establishing)" line, and never takes the "including" figure.
func ParsePGBench(out string) (PGBenchResult, error) {
	var r PGBenchResult
	found, processed := false, false
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "tps = "):
			if strings.Contains(line, "including") {
				continue
			}
			f := strings.Fields(strings.TrimPrefix(line, "tps = "))
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return PGBenchResult{}, fmt.Errorf("parse pgbench %q: %w", line, err)
			}
			r.TPS, found = v, true
		case strings.HasPrefix(line, "number of transactions actually processed:"):
			r.Processed = leadingInt(strings.TrimPrefix(line, "number of transactions actually processed:"))
			processed = true
		case strings.HasPrefix(line, "number of failed transactions:"):
			r.Failed = leadingInt(strings.TrimPrefix(line, "number of failed transactions:"))
		}
	}
	if !found && !(processed && r.Processed == 0) {
		return PGBenchResult{}, fmt.Errorf("parse pgbench: no tps line in:\n%s", lastLines(out, 20))
	}
	// Without a tps line, a run that processed nothing (its clients were still
	// connecting when its time was up, as on a loaded machine in a 1 s warm-up) did
	// no operations, which the rounds report as such.
	return r, nil
}

// leadingInt parses the first integer of s, as in "1234/5000" or "0 (0.000%)".
func leadingInt(s string) int {
	s = strings.TrimSpace(s)
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		s = s[:end]
	}
	n, _ := strconv.Atoi(s)
	return n
}

// lastLines returns the last n lines of s, for error messages that quote a tool's output.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// run runs pgbench on script for secs seconds with p's clients and the extra
// flags, and returns its output.
func (p PGBench) run(ctx context.Context, url, script string, secs int, extra ...string) (string, error) {
	// No -P: pgbench rejects -P 0, and progress lines would only be noise here.
	args := []string{"-n", "-f", script, "-c", strconv.Itoa(p.Clients), "-j", strconv.Itoa(min(2, p.Clients)), "-T", strconv.Itoa(secs)}
	cmd := exec.CommandContext(ctx, "pgbench", append(append(args, extra...), url)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pgbench: %w\n%s", err, lastLines(out.String(), 20))
	}
	return out.String(), nil
}

// OpenSlice runs a workload offered at a fixed rate for about d.
type OpenSlice func(ctx context.Context, d time.Duration, rate float64) (Sample, error)

// OpenLoop returns a slice that offers p's script at rate transactions a second
// (pgbench -R) for about its duration, as HTTPLoad.RunOpen offers requests, and
// reports the latency of each transaction from when it was due, read from pgbench's
// transaction log. Beside a scenario's own
// open-loop latency, it shows what the same machine and database give the bare
// statement at the same rate: a stall of the disk's flushes shows on both.
func (p PGBench) OpenLoop(ctx context.Context, env *Env) (OpenSlice, error) {
	url, script, err := p.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d time.Duration, rate float64) (Sample, error) {
		secs := max(1, int(math.Ceil(d.Seconds())))
		dir, err := os.MkdirTemp(env.Dir, "pgbench-log-")
		if err != nil {
			return Sample{}, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if _, err := p.run(ctx, url, script, secs,
			"-R", strconv.FormatFloat(rate, 'f', 0, 64), "-l", "--log-prefix", filepath.Join(dir, "tx")); err != nil {
			return Sample{}, err
		}
		s := Sample{Elapsed: time.Duration(secs) * time.Second}
		logs, err := filepath.Glob(filepath.Join(dir, "tx.*"))
		if err != nil {
			return Sample{}, err
		}
		for _, name := range logs {
			b, err := os.ReadFile(name)
			if err != nil {
				return Sample{}, err
			}
			lat, failed, err := ParsePGBenchLog(string(b))
			if err != nil {
				return Sample{}, fmt.Errorf("%s: %w", filepath.Base(name), err)
			}
			s.Latencies = append(s.Latencies, lat...)
			s.Failed += failed
		}
		s.Ops = len(s.Latencies)
		if s.Failed > 0 {
			s.FirstFailure = fmt.Sprintf("pgbench logged %d failed or skipped transactions", s.Failed)
		}
		return s, nil
	}, nil
}

// ParsePGBenchLog reads a pgbench transaction log written with --rate
// ("client_id transaction_no time script_no time_epoch time_us schedule_lag", times
// in microseconds) and returns each transaction's latency from when it was due, and
// how many transactions failed or were skipped. Under --rate, pgbench measures time
// from the transaction's scheduled start, so it holds the schedule lag already.
func ParsePGBenchLog(log string) (latencies []time.Duration, failed int, err error) {
	for line := range strings.Lines(log) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 7 {
			return nil, 0, fmt.Errorf("pgbench log line %q: want 7 fields (run with --rate)", strings.TrimSpace(line))
		}
		if f[2] == "skipped" || f[2] == "failed" {
			failed++
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("pgbench log line %q: time must be an integer", strings.TrimSpace(line))
		}
		latencies = append(latencies, time.Duration(us)*time.Microsecond)
	}
	return latencies, failed, nil
}
