package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// RequestFunc builds the next request a worker sends. It is called once per request so
// a scenario can vary ids or bodies.
type RequestFunc func(ctx context.Context) (*http.Request, error)

// Get returns a RequestFunc for GET url with header.
func Get(url string, header http.Header) RequestFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header = header.Clone()
		return req, nil
	}
}

// HTTPLoad is a closed-loop load generator: a fixed number of workers, each sending its
// next request as soon as the previous answer arrives, over keep-alive connections. A
// closed loop measures the throughput the server sustains rather than the rate we
// chose to offer it.
type HTTPLoad struct {
	workers    int
	newRequest RequestFunc
	client     *http.Client
}

// NewHTTPLoad returns a load generator with its own connection pool, sized so every
// worker keeps its connection between requests and between slices.
func NewHTTPLoad(workers int, newRequest RequestFunc) *HTTPLoad {
	transport := &http.Transport{
		Proxy:               nil, // all traffic stays on 127.0.0.1
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &HTTPLoad{
		workers:    workers,
		newRequest: newRequest,
		client:     &http.Client{Transport: transport, Timeout: 10 * time.Second},
	}
}

// Run is a Slice: it drives the load for about d. Only 2xx answers count as
// operations; anything else, transport errors included, counts as a failure.
func (l *HTTPLoad) Run(ctx context.Context, d time.Duration) (Sample, error) {
	type tally struct {
		ops, failed int
		first       string
		latencies   []time.Duration
	}
	tallies := make([]tally, l.workers)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range tallies {
		wg.Go(func() {
			t := &tallies[w]
			for ctx.Err() == nil && time.Now().Before(deadline) {
				status, latency, err := l.do(ctx)
				switch {
				case ctx.Err() != nil:
				case err == nil && status/100 == 2:
					t.ops++
					t.latencies = append(t.latencies, latency)
				default:
					t.failed++
					if t.first == "" {
						t.first = describeFailure(status, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	s := Sample{Elapsed: time.Since(start)}
	for _, t := range tallies {
		s.Ops += t.ops
		s.Failed += t.failed
		if s.FirstFailure == "" {
			s.FirstFailure = t.first
		}
		s.Latencies = append(s.Latencies, t.latencies...)
	}
	return s, nil
}

// RunOpen drives the load in an open loop for about d: requests are due on a fixed
// schedule, rate per second, whether or not earlier answers have come, as requests
// from many independent users would be. The load generator's workers take due
// requests in order, so at most its number of workers are in flight; a request's
// latency runs from when it was due, not from when a worker got to it, so a server
// that falls behind is charged for the queue it causes rather than offered less load
// (no coordinated omission). The slice ends when the last due request has been
// answered; its rate is the rate achieved, which falls short of rate when the server
// cannot keep up.
func (l *HTTPLoad) RunOpen(ctx context.Context, d time.Duration, rate float64) (Sample, error) {
	n := int(d.Seconds() * rate)
	if n < 1 {
		return Sample{}, fmt.Errorf("open loop: %g requests/s for %s is not one request", rate, d)
	}
	interval := time.Duration(float64(time.Second) / rate)
	due := make(chan time.Time, n) // never blocks: lateness is the workers', and charged
	type tally struct {
		ops, failed int
		first       string
		latencies   []time.Duration
	}
	tallies := make([]tally, l.workers)
	var wg sync.WaitGroup
	for w := range tallies {
		wg.Go(func() {
			t := &tallies[w]
			for at := range due {
				if ctx.Err() != nil {
					continue
				}
				status, _, err := l.do(ctx)
				latency := time.Since(at)
				switch {
				case ctx.Err() != nil:
				case err == nil && status/100 == 2:
					t.ops++
					t.latencies = append(t.latencies, latency)
				default:
					t.failed++
					if t.first == "" {
						t.first = describeFailure(status, err)
					}
				}
			}
		})
	}
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		due <- at
	}
	close(due)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	s := Sample{Elapsed: time.Since(start)}
	for _, t := range tallies {
		s.Ops += t.ops
		s.Failed += t.failed
		if s.FirstFailure == "" {
			s.FirstFailure = t.first
		}
		s.Latencies = append(s.Latencies, t.latencies...)
	}
	return s, nil
}

func (l *HTTPLoad) do(ctx context.Context) (status int, latency time.Duration, err error) {
	req, err := l.newRequest(ctx)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Reading the body to the end lets the connection be reused.
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(t0), err
}

func describeFailure(status int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
}

// sortedLatencies merges and sorts the latencies of samples for percentile lookups.
func sortedLatencies(samples []Sample) []time.Duration {
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s.Latencies...)
	}
	slices.Sort(all)
	return all
}
