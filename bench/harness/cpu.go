package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"time"
)

// CPUUse is the CPU time each part of a measurement used between two readings of a
// CPUMeter: the Switchboard server, the Postgres processes that ran throughout
// (the server's pooled backends among them), this process (the load generator), and
// the whole machine, whatever ran on it.
type CPUUse struct {
	Server, Postgres, LoadGen, Machine time.Duration
}

// CPUMeter reads, from /proc, the CPU time of a server process, of every Postgres
// process and of this process, and the machine's busy time. A ratio against pgbench
// says how much slower an operation is than pgbench's transaction; the CPU split says
// where the time went, and so how high the ratio could go if one part cost nothing.
type CPUMeter struct {
	serverPID int
	postgres  []int
	start     cpuReading
}

// cpuReading is one reading of a CPUMeter: the CPU time so far of each process, by
// id, and the machine's counters.
type cpuReading struct {
	server, postgres, loadgen map[int]time.Duration
	machine                   CPUTimes
}

// StartCPUMeter takes the first reading. serverPID 0 measures no server (a
// baseline). Postgres processes are those running now: a connection opened later
// (pgbench's) counts in Machine only.
func StartCPUMeter(serverPID int) (*CPUMeter, error) {
	postgres, err := PIDsNamed("postgres")
	if err != nil {
		return nil, err
	}
	m := &CPUMeter{serverPID: serverPID, postgres: postgres}
	if m.start, err = m.read(); err != nil {
		return nil, err
	}
	return m, nil
}

// Stop takes the second reading and returns what each part used since the first.
func (m *CPUMeter) Stop() (CPUUse, error) {
	end, err := m.read()
	if err != nil {
		return CPUUse{}, err
	}
	return CPUUse{
		Server:   cpuSince(end.server, m.start.server),
		Postgres: cpuSince(end.postgres, m.start.postgres),
		LoadGen:  cpuSince(end.loadgen, m.start.loadgen),
		Machine:  end.machine.busySince(m.start.machine),
	}, nil
}

func (m *CPUMeter) read() (cpuReading, error) {
	var r cpuReading
	var err error
	if m.serverPID != 0 {
		if r.server, err = readCPU(m.serverPID); err != nil {
			return r, err
		}
	}
	if r.loadgen, err = readCPU(os.Getpid()); err != nil {
		return r, err
	}
	if r.postgres, err = readCPU(m.postgres...); err != nil {
		return r, err
	}
	r.machine, err = ReadCPUTimes()
	return r, err
}

// readCPU reads the CPU time of each of pids still running.
func readCPU(pids ...int) (map[int]time.Duration, error) {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		d, err := ProcessCPU(pid)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			// Exited before the open, or between it and the read.
			continue
		}
		if err != nil {
			return nil, err
		}
		out[pid] = d
	}
	return out, nil
}

// cpuSince is the CPU time the processes of after used since before, counting only
// those running at both readings: a process that exits in between (a backend of
// another database) would otherwise count negative.
func cpuSince(after, before map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		if t0, ok := before[pid]; ok {
			d += t - t0
		}
	}
	return d
}

// CPUFigure reports the CPU time per operation of a scenario slice (ours, over ops
// operations) beside the whole machine's per transaction of a baseline slice (base,
// over baseOps), and the ratio the scenario could reach against the baseline if its
// server cost nothing: the machine's CPUs spent only on its Postgres and load
// generator shares, against the baseline's median rate in the rounds of r. It is a
// ceiling, not a forecast: Postgres's share per operation is taken as it is at the
// scenario's own rate.
func CPUFigure(name, unit string, r Rounds, ours CPUUse, ops int, base CPUUse, baseOps int) Figure {
	per := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(max(1, n)) }
	baseline, baseRate := r.Result.Baseline, 0.0
	if r.Result.Reference.Rate != nil {
		baseRate = r.Result.Reference.Rate.Median
	}
	floor := per(ours.Postgres+ours.LoadGen, ops)
	ceiling := 0.0
	if floor > 0 && baseRate > 0 {
		ceiling = float64(runtime.NumCPU()) * 1e6 / floor / baseRate
	}
	return Figure{
		Name: name, Value: per(ours.Server+ours.Postgres, ops), Unit: "µs",
		Detail: fmt.Sprintf("server process %.0f µs + Postgres processes %.0f µs per %s over %d in one slice, from /proc; the load generator took %.0f µs more, the whole machine %.0f µs; %s: the whole machine %.0f µs per tx in the slice after. Were the server free, the %d CPUs spent only on the Postgres and load-generator shares would allow %.2f× %s's median rate",
			per(ours.Server, ops), per(ours.Postgres, ops), unit, ops, per(ours.LoadGen, ops), per(ours.Machine, ops),
			baseline, per(base.Machine, baseOps), runtime.NumCPU(), ceiling, baseline),
	}
}

// Add sums two uses, e.g. of two parts of one slice.
func (u CPUUse) Add(v CPUUse) CPUUse {
	return CPUUse{Server: u.Server + v.Server, Postgres: u.Postgres + v.Postgres, LoadGen: u.LoadGen + v.LoadGen, Machine: u.Machine + v.Machine}
}

// Scaled is u with every part multiplied by f: a use metered over part of an
// interval, extended to all of it.
func (u CPUUse) Scaled(f float64) CPUUse {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return CPUUse{Server: scale(u.Server), Postgres: scale(u.Postgres), LoadGen: scale(u.LoadGen), Machine: scale(u.Machine)}
}

// MeteredSlice runs one slice of a scenario and returns, with its sample, the CPU
// its operations used.
type MeteredSlice func(ctx context.Context, d time.Duration) (Sample, CPUUse, error)

// Metered meters a slice of load against a server that outlives it, or with
// serverPID 0 a slice without one (a baseline).
func Metered(serverPID int, slice Slice) MeteredSlice {
	return func(ctx context.Context, d time.Duration) (Sample, CPUUse, error) {
		meter, err := StartCPUMeter(serverPID)
		if err != nil {
			return Sample{}, CPUUse{}, err
		}
		s, err := slice(ctx, d)
		if err != nil {
			return Sample{}, CPUUse{}, err
		}
		use, err := meter.Stop()
		return s, use, err
	}
}

// CPUFollowUp is a follow-up that runs one metered slice of the scenario, then one
// baseline slice with the machine metered, and reports CPUFigure.
func CPUFollowUp(name, unit string, run MeteredSlice) FollowUp {
	return func(ctx context.Context, r Rounds) []Figure {
		s, ours, err := run(ctx, r.Config.Slice)
		switch {
		case err != nil:
			return []Figure{FigureError(name, err)}
		case s.Failed > 0 || s.Ops == 0:
			return []Figure{FigureError(name, fmt.Errorf("%d of %d operations failed (first: %s)", s.Failed, s.Failed+s.Ops, s.FirstFailure))}
		}
		b, base, err := Metered(0, r.Baseline)(ctx, r.Config.Slice)
		if err != nil {
			return []Figure{FigureError(name, err)}
		}
		return []Figure{CPUFigure(name, unit, r, ours, s.Ops, base, b.Ops)}
	}
}
