package ratelimit

import (
	"context"
	"time"
)

// Spacing lets each key have one call per window, on every replica that
// shares its Buckets: a key's bucket holds one token and refills it once
// a window. Keys are namespaced with "spacing:" in the store.
type Spacing struct {
	Buckets Buckets
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// NewSpacing returns the spacing of calls over buckets.
func NewSpacing(buckets Buckets) *Spacing { return &Spacing{Buckets: buckets} }

func (s *Spacing) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Claim takes key's turn when no call took it within the last window and
// returns true; otherwise false and how long until the next turn.
// Errors: the store's.
func (s *Spacing) Claim(ctx context.Context, key string, window time.Duration) (bool, time.Duration, error) {
	p := spacingPolicy(window)
	taken, left, err := s.Buckets.TakeTokens(ctx, "spacing:"+key, 1, p.PerSecond, p.Burst, s.now())
	if err != nil {
		return false, 0, err
	}
	if taken == 1 {
		return true, 0, nil
	}
	return false, max(p.until(left, 1), time.Millisecond), nil
}

// Release gives back the turn Claim took for key. Errors: the store's.
func (s *Spacing) Release(ctx context.Context, key string, window time.Duration) error {
	p := spacingPolicy(window)
	return s.Buckets.ReturnTokens(ctx, "spacing:"+key, 1, p.PerSecond, p.Burst, s.now())
}

// spacingPolicy is one token a window.
func spacingPolicy(window time.Duration) Policy {
	return Policy{Name: "spacing", PerSecond: 1 / window.Seconds(), Burst: 1}
}
