package harness

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{0.7}, Summary{Median: 0.7, Min: 0.7, Max: 0.7}},
		{"odd count, unsorted", []float64{1.2, 0.4, 0.9}, Summary{Median: 0.9, Min: 0.4, Max: 1.2}},
		{"even count averages the middle two", []float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSummarizeLeavesInputAlone(t *testing.T) {
	t.Parallel()
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("Summarize reordered its input: %v", in)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var sorted []time.Duration
	for i := 1; i <= 100; i++ {
		sorted = append(sorted, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(sorted, tc.p); got != tc.want {
			t.Errorf("Percentile(p%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}
