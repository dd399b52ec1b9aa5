package harness

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParsePGBench(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  string
		want PGBenchResult
	}{
		{
			name: "pgbench 15",
			out: `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/s.sql
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 1 s
number of transactions actually processed: 97128
number of failed transactions: 0 (0.000%)
latency average = 0.021 ms
initial connection time = 3.417 ms
tps = 97162.201095 (without initial connection time)
`,
			want: PGBenchResult{TPS: 97162.201095, Processed: 97128},
		},
		{
			name: "pgbench 12 takes the excluding line",
			out: `transaction type: insert.sql
number of clients: 64
number of threads: 2
duration: 3 s
number of transactions actually processed: 6771
latency average = 28.533 ms
tps = 2243.018413 (including connections establishing)
tps = 2257.364561 (excluding connections establishing)
`,
			want: PGBenchResult{TPS: 2257.364561, Processed: 6771},
		},
		{
			name: "failed transactions",
			out: `number of transactions actually processed: 900
number of failed transactions: 12 (1.316%)
tps = 300.5 (without initial connection time)
`,
			want: PGBenchResult{TPS: 300.5, Processed: 900, Failed: 12},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePGBench(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ParsePGBench = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParsePGBenchWithoutTPS(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"", "pgbench: error: connection to server failed\n", "tps = 12.0 (including connections establishing)\n"} {
		if _, err := ParsePGBench(out); err == nil {
			t.Errorf("ParsePGBench(%q) succeeded, want an error", out)
		}
	}
}

// A run whose clients were still connecting when its time was up processed nothing
// and prints no tps line: no operations, not a parse error.
func TestParsePGBenchWithoutTransactions(t *testing.T) {
	t.Parallel()
	out := "pgbench (15.20 (Debian 15.20-0+deb12u1))\nnumber of clients: 64\nduration: 1 s\n" +
		"number of transactions actually processed: 0\nnumber of failed transactions: 0 (NaN%)\n"
	r, err := ParsePGBench(out)
	if err != nil || r != (PGBenchResult{}) {
		t.Errorf("ParsePGBench = %+v, %v; want no transactions and no error", r, err)
	}
}

func TestParsePGBenchLog(t *testing.T) {
	t.Parallel()
	log := "0 0 1520 0 1732460000 123456 340\n1 0 980 0 1732460000 124000 12\n2 0 skipped 0 1732460000 125000 50000\n3 0 failed 0 1732460000 126000 0\n\n"
	lat, failed, err := ParsePGBenchLog(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{1520 * time.Microsecond, 980 * time.Microsecond}; !slices.Equal(lat, want) || failed != 2 {
		t.Errorf("latencies %v failed %d, want %v and 2", lat, failed, want)
	}
	if _, _, err := ParsePGBenchLog("0 0 1520 0 1732460000 123456\n"); err == nil || !strings.Contains(err.Error(), "--rate") {
		t.Errorf("a log without schedule lag: err = %v, want one naming --rate", err)
	}
	if _, _, err := ParsePGBenchLog("0 0 x 0 1732460000 123456 3\n"); err == nil {
		t.Error("a log with a time that is no number was accepted")
	}
}
