package harness

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestParseCPUTimes(t *testing.T) {
	t.Parallel()
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  3493 0 2874 49399 268 0 62 15 7 0\ncpu0 1592 0 1120 25304 20 0 11 4 0 0\nintr 1 2 3\n"
	got, err := ParseCPUTimes(stat)
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{Total: 3493 + 2874 + 49399 + 268 + 62 + 15, Steal: 15, Busy: 3493 + 2874 + 62}
	if got != want {
		t.Errorf("ParseCPUTimes = %+v, want %+v (guest is already in user)", got, want)
	}
}

func TestParseCPUTimesRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, stat := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 7 x\n"} {
		if _, err := ParseCPUTimes(stat); err == nil {
			t.Errorf("ParseCPUTimes(%q) succeeded, want an error", stat)
		}
	}
}

func TestStealPercent(t *testing.T) {
	t.Parallel()
	before, err := ParseCPUTimes("cpu  1000 0 500 8000 100 0 50 50 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// 400 more ticks in total, 20 of them stolen.
	after, err := ParseCPUTimes("cpu  1200 0 600 8070 100 0 60 70 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := StealPercent(before, after); math.Abs(got-5) > 1e-9 {
		t.Errorf("StealPercent = %v, want 5", got)
	}
	if got := StealPercent(after, after); got != 0 {
		t.Errorf("StealPercent with no ticks between = %v, want 0", got)
	}
}

func TestParseCPUModel(t *testing.T) {
	t.Parallel()
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if got := ParseCPUModel(info); got != "AMD EPYC 7B13" {
		t.Errorf("ParseCPUModel = %q", got)
	}
	if got := ParseCPUModel("processor\t: 0\n"); got != "unknown" {
		t.Errorf("ParseCPUModel without model name = %q, want unknown", got)
	}
}

func TestParseProcessCPU(t *testing.T) {
	t.Parallel()
	// Fields 14 and 15 are utime and stime, after a command name with a space and
	// a parenthesis in it.
	stat := "4242 (post gres) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 130 0 0 20 0 1 0 100 1000 200 18446744073709551615\n"
	got, err := ParseProcessCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 380 * 10 * time.Millisecond; got != want {
		t.Errorf("ParseProcessCPU = %s, want %s", got, want)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 a 1 0"} {
		if _, err := ParseProcessCPU(bad); err == nil {
			t.Errorf("ParseProcessCPU(%q) succeeded", bad)
		}
	}
}

func TestProcessCPUOfThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	pids, err := PIDsNamed(filepath.Base(os.Args[0])[:min(15, len(filepath.Base(os.Args[0])))])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) {
		t.Errorf("PIDsNamed(own name) = %v, want it to include %d", pids, os.Getpid())
	}
}

func TestBusySinceCountsNeitherIdleNorIOWaitNorSteal(t *testing.T) {
	t.Parallel()
	before, err := ParseCPUTimes("cpu  1000 10 500 8000 100 5 50 50 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// +200 user, +20 nice, +100 system, +900 idle, +80 iowait, +5 irq, +15 softirq, +40 steal
	after, err := ParseCPUTimes("cpu  1200 30 600 8900 180 10 65 90 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := after.busySince(before), 340*clockTick; got != want {
		t.Errorf("busySince = %s, want %s", got, want)
	}
	if got := before.busySince(after); got != 0 {
		t.Errorf("busySince backwards = %s, want 0", got)
	}
}

func TestParseProcessMemory(t *testing.T) {
	t.Parallel()
	status := "Name:\tswitchboard\nVmPeak:\t 1200000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n"
	rss, peak, err := ParseProcessMemory(status)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 100<<20 || peak != 200<<20 {
		t.Errorf("ParseProcessMemory = %d, %d; want %d, %d", rss, peak, 100<<20, 200<<20)
	}
	for _, bad := range []string{"", "VmRSS:\t1 kB\n", "VmRSS:\tx kB\nVmHWM:\t1 kB\n", "VmRSS:\t1 MB\nVmHWM:\t1 kB\n"} {
		if _, _, err := ParseProcessMemory(bad); err == nil {
			t.Errorf("ParseProcessMemory(%q) succeeded, want an error", bad)
		}
	}
	if _, _, err := ProcessMemory(os.Getpid()); err != nil {
		t.Errorf("ProcessMemory of this process: %v", err)
	}
}
