package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
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

// Post returns a RequestFunc for POST url with a JSON body and header.
func Post(url string, header http.Header, body []byte) RequestFunc {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if header != nil {
			req.Header = header.Clone()
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

// HTTPLoad is a closed-loop load generator: a fixed number of workers, each sending its
// next request as soon as the previous answer arrives, over keep-alive connections. A
// closed loop measures the throughput the server sustains rather than the rate we
// chose to offer it.
//
// Its client is chosen to match the baseline's. Against pgbench, whose C client spends
// a few microseconds per transaction, a lean client (NewLeanHTTPLoad): each worker
// owns one HTTP/1.1 connection and writes its request and reads the answer on it
// with net/http's framing (see clientConn), rather than through
// http.Transport, whose two goroutines per connection cost about 40 µs of CPU per
// request, CPU the 2-core machine then takes from the server under test. Against the
// hello-world server, both sides are driven by the same client (NewHTTPLoad,
// http.Transport), so its cost is paid on both sides of the ratio.
type HTTPLoad struct {
	workers    int
	newRequest RequestFunc
	// client is http.Transport's; conns, when set, the lean client's.
	client *http.Client
	conns  []*clientConn
	// rotation, when set, is what the lean client sends instead of newRequest's.
	rotation *rotation
}

// NewHTTPLoad returns a load generator on http.Transport with its own connection
// pool, sized so every worker keeps its connection between requests and slices.
func NewHTTPLoad(workers int, newRequest RequestFunc) *HTTPLoad {
	transport := &http.Transport{
		Proxy:               nil, // all traffic stays on 127.0.0.1
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &HTTPLoad{workers: workers, newRequest: newRequest, client: &http.Client{Transport: transport, Timeout: requestTimeout}}
}

// NewLeanHTTPLoad returns a load generator whose workers each keep one connection
// of their own, between requests and between slices.
func NewLeanHTTPLoad(workers int, newRequest RequestFunc) *HTTPLoad {
	return &HTTPLoad{workers: workers, newRequest: newRequest, conns: make([]*clientConn, workers)}
}

// NewRotatingHTTPLoad returns a lean load generator whose workers send reqs in
// turn, each rendered once, as wrk renders its one request once: building a
// request is then not charged, request after request, to the machine the server
// is measured on. The requests must go to one address.
func NewRotatingHTTPLoad(workers int, reqs []*http.Request) (*HTTPLoad, error) {
	if len(reqs) == 0 {
		return nil, errors.New("rotating load: no requests")
	}
	l := &HTTPLoad{workers: workers, conns: make([]*clientConn, workers), rotation: &rotation{addr: reqs[0].URL.Host}}
	for _, req := range reqs {
		if req.URL.Host != l.rotation.addr || req.Method == http.MethodHead {
			return nil, fmt.Errorf("rotating load: %s %s is not a request to %s with an answer body", req.Method, req.URL, l.rotation.addr)
		}
		var buf bytes.Buffer
		wire, err := renderRequest(&buf, req)
		if err != nil {
			return nil, err
		}
		l.rotation.wires = append(l.rotation.wires, wire)
	}
	return l, nil
}

// NewRotatingPostLoad is a rotating load of JSON POSTs of bodies to url, with
// header.
func NewRotatingPostLoad(workers int, url string, header http.Header, bodies [][]byte) (*HTTPLoad, error) {
	reqs := make([]*http.Request, len(bodies))
	for i, b := range bodies {
		req, err := Post(url, header, b)(context.Background())
		if err != nil {
			return nil, err
		}
		reqs[i] = req
	}
	return NewRotatingHTTPLoad(workers, reqs)
}

// rotation is the rendered requests of a rotating load.
type rotation struct {
	addr  string
	wires [][]byte
	next  atomic.Uint64
}

// requestTimeout bounds one request and its answer.
const requestTimeout = 10 * time.Second

// clientConn is one worker's connection. The worker writes its request and
// reads the answer on it itself, with net/http's own framing
// (Request.Write, ReadResponse), so no goroutine hand-off per request
// (http.Transport's) is charged to the machine the server is measured on.
type clientConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	// wire is reused to render requests into.
	wire bytes.Buffer
	// deadline is the connection's deadline; it is moved only when less than
	// half of requestTimeout is left, not before every request.
	deadline time.Time
}

func (c *clientConn) close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
	}
}

// roundTrip sends req and reads the answer to its end; see send.
func (c *clientConn) roundTrip(req *http.Request) (int, error) {
	wire, err := renderRequest(&c.wire, req)
	if err != nil {
		return 0, err
	}
	return c.send(req.Context(), req.URL.Host, wire, req)
}

// renderRequest renders req as net/http writes it, into buf.
func renderRequest(buf *bytes.Buffer, req *http.Request) ([]byte, error) {
	buf.Reset()
	if err := req.Write(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// send writes the rendered request wire to addr and reads the answer to its end
// (req, when not nil, is the request wire renders: ReadResponse needs it only to
// know a HEAD's answer has no body), dialing first when the connection is closed
// or to another address; a connection that failed or that the server closes is
// dropped.
func (c *clientConn) send(ctx context.Context, addr string, wire []byte, req *http.Request) (int, error) {
	if c.c != nil && c.addr != addr {
		c.close()
	}
	if c.c == nil {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		c.addr, c.c = addr, conn
		c.br = bufio.NewReaderSize(conn, 16<<10)
		c.deadline = time.Time{}
	}
	now := time.Now()
	deadline := now.Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if c.deadline.IsZero() || c.deadline.Sub(now) < requestTimeout/2 || deadline.Before(c.deadline) {
		_ = c.c.SetDeadline(deadline)
		c.deadline = deadline
	}
	status, err := c.exchange(wire, req)
	if err != nil {
		c.close()
	}
	return status, err
}

func (c *clientConn) exchange(wire []byte, req *http.Request) (int, error) {
	if _, err := c.c.Write(wire); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(c.br, req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if err != nil {
		return 0, err
	}
	if res.Close {
		c.close()
	}
	return res.StatusCode, nil
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
				status, latency, err := l.do(ctx, w)
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
				status, _, err := l.do(ctx, w)
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

func (l *HTTPLoad) do(ctx context.Context, worker int) (status int, latency time.Duration, err error) {
	if l.rotation != nil {
		wire := l.rotation.wires[l.rotation.next.Add(1)%uint64(len(l.rotation.wires))]
		t0 := time.Now()
		// Rotating requests are never HEADs (NewRotatingHTTPLoad).
		status, err = l.conn(worker).send(ctx, l.rotation.addr, wire, nil)
		return status, time.Since(t0), err
	}
	req, err := l.newRequest(ctx)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if l.conns == nil {
		resp, err := l.client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		// Reading the body to the end lets the connection be reused.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(t0), err
	}
	status, err = l.conn(worker).roundTrip(req)
	return status, time.Since(t0), err
}

// conn is the lean client's connection of worker.
func (l *HTTPLoad) conn(worker int) *clientConn {
	c := l.conns[worker]
	if c == nil {
		c = &clientConn{}
		l.conns[worker] = c
	}
	return c
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
