package webhook

import (
	"math/rand/v2"
	"time"
)

// Schedule is the wait before each attempt: the first is immediate, then
// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Eight attempts in all.
var Schedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// JitterFraction spreads retries by ±10% so failing endpoints do not get
// their retries in lockstep.
const JitterFraction = 0.1

// NextDelay is how long to wait after attempt number attempts (1-based)
// failed, under schedule; false when no attempt is left. retryAfter, when
// positive, is the receiver's Retry-After: the next attempt is never
// sooner than it asked.
func NextDelay(schedule []time.Duration, attempts int, retryAfter time.Duration) (time.Duration, bool) {
	if attempts >= len(schedule) {
		return 0, false
	}
	d := schedule[attempts]
	if d > 0 {
		spread := float64(d) * JitterFraction
		d = time.Duration(float64(d) - spread + rand.Float64()*2*spread)
	}
	return max(d, retryAfter), true
}
