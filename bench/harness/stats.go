package harness

import (
	"math"
	"slices"
	"time"
)

// Summary is the spread of a set of per-round values. The median is the result; min
// and max show how much the machine's noise moved it.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize returns the median, minimum and maximum of xs; the zero Summary when xs is
// empty.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	median := s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: median, Min: s[0], Max: s[n-1]}
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of sorted, or 0
// when sorted is empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
