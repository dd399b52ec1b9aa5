package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUTimes is the machine-wide line of /proc/stat, in clock ticks since boot. Two
// samples tell how much CPU the hypervisor took from this machine in between (steal),
// which is the first suspect when a run's ratios spread widely.
type CPUTimes struct {
	Total uint64
	Steal uint64
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
			if i == 7 {
				t.Steal = v
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
