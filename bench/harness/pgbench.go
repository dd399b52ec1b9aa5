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

func (p PGBench) setup(ctx context.Context, env *Env) (Slice, error) {
	if env.Database != "postgres" {
		return nil, fmt.Errorf("baseline %s needs -database postgres", p.Name)
	}
	if _, err := exec.LookPath("pgbench"); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", p.Name, err)
	}
	url, err := env.PostgresURL(ctx)
	if err != nil {
		return nil, err
	}
	if p.Init != "" {
		if err := psql(ctx, url, p.Init); err != nil {
			return nil, fmt.Errorf("baseline %s init: %w", p.Name, err)
		}
	}
	script := filepath.Join(env.Dir, p.Name+".sql")
	if err := os.WriteFile(script, []byte(p.Script), 0o600); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", p.Name, err)
	}
	return func(ctx context.Context, d time.Duration) (Sample, error) {
		secs := max(1, int(math.Ceil(d.Seconds())))
		// No -P: pgbench rejects -P 0, and progress lines would only be noise here.
		cmd := exec.CommandContext(ctx, "pgbench", "-n", "-f", script,
			"-c", strconv.Itoa(p.Clients), "-j", strconv.Itoa(min(2, p.Clients)), "-T", strconv.Itoa(secs), url)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return Sample{}, fmt.Errorf("pgbench: %w\n%s", err, lastLines(out.String(), 20))
		}
		r, err := ParsePGBench(out.String())
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
	found := false
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
		case strings.HasPrefix(line, "number of failed transactions:"):
			r.Failed = leadingInt(strings.TrimPrefix(line, "number of failed transactions:"))
		}
	}
	if !found {
		return PGBenchResult{}, fmt.Errorf("parse pgbench: no tps line in:\n%s", lastLines(out, 20))
	}
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
