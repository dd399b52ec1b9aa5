// Package ratelimit keeps the request and failure budgets that stop one
// tenant or one client from exhausting the others: token buckets kept in a
// Buckets store, which every replica of a deployment shares (the database
// on Postgres; memory in a single SQLite process).
//
// A shared store would cost one database statement per request, so each
// replica leases tokens in small batches (Policy.lease) and spends them
// locally: a replica never spends a token the shared bucket did not give
// it, so replicas together admit no more than one process would. Tokens a
// replica leased and did not spend go back after LeaseTTL.
package ratelimit

import (
	"context"
	"math"
	"time"
)

// Policy is one limit: PerSecond tokens a second refill a bucket of Burst
// tokens; a request spends one.
type Policy struct {
	// Name names the policy in the RateLimit-Policy header ("account").
	Name      string
	PerSecond float64
	Burst     int
}

// Enabled reports whether the policy limits anything; a zero rate
// disables it.
func (p Policy) Enabled() bool { return p.PerSecond > 0 }

// Window is how long an empty bucket takes to fill again, in whole
// seconds (at least one): the w of RateLimit-Policy.
func (p Policy) Window() time.Duration {
	return time.Duration(math.Ceil(float64(p.burst())/p.PerSecond)) * time.Second
}

func (p Policy) burst() int { return max(p.Burst, 1) }

// lease is how many tokens a replica takes from the shared bucket at once:
// 50 ms of the rate, at most a tenth of the burst, at least one. Small
// enough that tokens idle in one replica hardly matter (they return after
// LeaseTTL); large enough that a busy key costs the database a statement
// per 50 ms rather than per request.
func (p Policy) lease() int {
	return max(1, min(int(p.PerSecond*0.05), p.burst()/10))
}

// refill is the bucket's content after elapsed since it held tokens.
func (p Policy) refill(tokens float64, elapsed time.Duration) float64 {
	if elapsed < 0 {
		elapsed = 0
	}
	return math.Min(float64(p.burst()), tokens+elapsed.Seconds()*p.PerSecond)
}

// until is how long a bucket holding tokens takes to hold n.
func (p Policy) until(tokens float64, n float64) time.Duration {
	if tokens >= n {
		return 0
	}
	return time.Duration((n - tokens) / p.PerSecond * float64(time.Second))
}

// Quota is a key's budget after a decision, what the RateLimit header
// fields report.
type Quota struct {
	Policy Policy
	// Remaining is about how many more requests would be admitted now.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter is how long to wait before the next try when refused;
	// 0 when admitted.
	RetryAfter time.Duration
}

// Admitted reports whether the request may go on.
func (q Quota) Admitted() bool { return q.RetryAfter == 0 }

// Buckets stores token buckets by key. A bucket that does not exist is
// full. Implementations are safe for concurrent use by many processes.
type Buckets interface {
	// TakeTokens refills key's bucket at perSecond tokens a second up to
	// now, never above burst, and takes up to want whole tokens from it.
	// It returns how many it took and the tokens left. Errors: the
	// store's (an unavailable database).
	TakeTokens(ctx context.Context, key string, want int, perSecond float64, burst int, now time.Time) (taken int, left float64, err error)
	// ReturnTokens refills key's bucket as TakeTokens does and puts n
	// unspent tokens back into it, never above burst. Errors: the store's.
	ReturnTokens(ctx context.Context, key string, n int, perSecond float64, burst int, now time.Time) error
	// PruneBuckets deletes the buckets untouched since before, which any
	// policy refilled since; it returns how many it deleted.
	PruneBuckets(ctx context.Context, before time.Time) (int, error)
}

// clientKey is the context key of the client address a request counts as.
type clientKey struct{}

// WithClient records the address the inbound adapter decided a request
// comes from (see ClientKey), for adapters behind it that apply
// per-address limits themselves (GraphQL over WebSocket).
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// quotaKey is the context key of the quota a request's edge spent.
type quotaKey struct{}

// WithQuota records the quota the inbound adapter spent for a request,
// for a handler behind it that answers a refusal itself (the MCP handler
// answers a refused tool call as the call's own error).
func WithQuota(ctx context.Context, q Quota) context.Context {
	return context.WithValue(ctx, quotaKey{}, q)
}

// QuotaFrom is the quota WithQuota recorded; false when none was.
func QuotaFrom(ctx context.Context) (Quota, bool) {
	q, ok := ctx.Value(quotaKey{}).(Quota)
	return q, ok
}

// ClientFrom is the address WithClient recorded, or "".
func ClientFrom(ctx context.Context) string {
	addr, _ := ctx.Value(clientKey{}).(string)
	return addr
}
