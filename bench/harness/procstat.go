package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUTimes is the machine-wide line of /proc/stat, in clock ticks since boot. Two
// samples tell how much CPU the hypervisor took from this machine in between (steal),
// which is the first suspect when a run's ratios spread widely.
type CPUTimes struct {
	Total uint64
	Steal uint64
	// Busy is the time spent running anything: user, nice, system, irq and softirq
	// (not idle, iowait or steal).
	Busy uint64
}

// busySince is the machine's busy CPU time from before to t.
func (t CPUTimes) busySince(before CPUTimes) time.Duration {
	if t.Busy < before.Busy {
		return 0
	}
	return time.Duration(t.Busy-before.Busy) * clockTick
}

// ReadCPUTimes samples /proc/stat.
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("read cpu times: %w", err)
	}
	return ParseCPUTimes(string(b))
}

// ParseCPUTimes reads the aggregate "cpu" line of /proc/stat text. Total sums user,
// nice, system, idle, iowait, irq, softirq and steal; guest time is left out because
// the kernel already counts it in user and nice.
func ParseCPUTimes(stat string) (CPUTimes, error) {
	sc := bufio.NewScanner(strings.NewReader(stat))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 9 {
			return CPUTimes{}, fmt.Errorf("parse /proc/stat: cpu line has %d fields, want at least 9", len(fields))
		}
		var t CPUTimes
		for i, f := range fields[1:9] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("parse /proc/stat: %w", err)
			}
			t.Total += v
			switch i {
			case 3, 4: // idle, iowait
			case 7:
				t.Steal = v
			default:
				t.Busy += v
			}
		}
		return t, nil
	}
	return CPUTimes{}, fmt.Errorf("parse /proc/stat: no cpu line")
}

// StealPercent is the share of all CPU time between two samples that the hypervisor
// stole, in percent.
func StealPercent(before, after CPUTimes) float64 {
	if after.Total <= before.Total || after.Steal < before.Steal {
		return 0
	}
	return 100 * float64(after.Steal-before.Steal) / float64(after.Total-before.Total)
}

// CPUModel returns the first "model name" of /proc/cpuinfo, so a report says which
// hardware its numbers came from.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	return ParseCPUModel(string(b))
}

// ParseCPUModel returns the first "model name" value of /proc/cpuinfo text, or
// "unknown".
func ParseCPUModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		key, value, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown"
}

// clockTick is Linux's USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100 on
// every architecture Go runs Linux on.
const clockTick = 10 * time.Millisecond

// ProcessCPU returns the CPU time, user and system, process pid has used so far, or
// an error wrapping os.ErrNotExist once it has exited.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process cpu: %w", err)
	}
	return ParseProcessCPU(string(b))
}

// ParseProcessCPU reads the user and system time of /proc/<pid>/stat text.
func ParseProcessCPU(stat string) (time.Duration, error) {
	// The command name, in parentheses, may hold spaces and parentheses itself;
	// the fields after its last ")" start with field 3, state.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/<pid>/stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/<pid>/stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/<pid>/stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
}

// PIDsNamed returns the ids of the running processes whose command name is name,
// such as "postgres".
func PIDsNamed(name string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ProcessMemory returns the resident set size of process pid now and at its
// peak so far (VmRSS and VmHWM of /proc/<pid>/status), in bytes.
func ProcessMemory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read process memory: %w", err)
	}
	return ParseProcessMemory(string(b))
}

// ParseProcessMemory reads VmRSS and VmHWM ("VmHWM:   123456 kB") of
// /proc/<pid>/status text, in bytes.
func ParseProcessMemory(status string) (rss, peak int64, err error) {
	found := 0
	for _, line := range strings.Split(status, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("parse /proc/<pid>/status: %s is %q", name, value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse /proc/<pid>/status: %s: %w", name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("parse /proc/<pid>/status: no VmRSS and VmHWM")
	}
	return rss, peak, nil
}
