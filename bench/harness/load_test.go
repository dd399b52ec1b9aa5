package harness

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHTTPLoadCountsOnly2xx(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// The first request of each load fails, so that a load that makes
		// only a few requests on a busy machine still meets a failure.
		if c := n.Add(1); c == 1 || c%10 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(helloBody)
	}))
	t.Cleanup(srv.Close)

	for _, newLoad := range []func(int, RequestFunc) *HTTPLoad{NewHTTPLoad, NewLeanHTTPLoad} {
		n.Store(0)
		checkCounts(t, newLoad(4, Get(srv.URL, http.Header{"X-Api-Key": {"k"}})))
	}
}

func checkCounts(t *testing.T, load *HTTPLoad) {
	t.Helper()
	s, err := load.Run(t.Context(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ops == 0 || s.Failed == 0 || len(s.Latencies) != s.Ops {
		t.Fatalf("sample ops=%d failed=%d latencies=%d, want both counted and one latency per op", s.Ops, s.Failed, len(s.Latencies))
	}
	if !strings.Contains(s.FirstFailure, "500") {
		t.Errorf("FirstFailure = %q, want the status", s.FirstFailure)
	}
	if s.Rate() <= 0 || s.Elapsed < 200*time.Millisecond {
		t.Errorf("rate %v over %v", s.Rate(), s.Elapsed)
	}
}

func TestRunOpenOffersTheRate(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write(helloBody)
	}))
	t.Cleanup(srv.Close)

	load := NewHTTPLoad(8, Get(srv.URL, nil))
	s, err := load.RunOpen(t.Context(), 300*time.Millisecond, 100)
	if err != nil {
		t.Fatal(err)
	}
	// 100/s for 0.3 s is 30 requests, due every 10 ms from the start.
	if s.Ops != 30 || s.Failed != 0 || len(s.Latencies) != 30 || n.Load() != 30 {
		t.Fatalf("sample ops=%d failed=%d latencies=%d served=%d, want 30 of each", s.Ops, s.Failed, len(s.Latencies), n.Load())
	}
	if s.Elapsed < 290*time.Millisecond {
		t.Errorf("elapsed %s, want at least the 29 intervals before the last request", s.Elapsed)
	}
	if _, err := load.RunOpen(t.Context(), time.Millisecond, 10); err == nil {
		t.Error("RunOpen of less than one request succeeded")
	}
}

func TestRunOpenChargesQueueing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)

	// One worker, a request due every 5 ms, each taking 20 ms: the tenth waits
	// for the nine before it, and its latency says so.
	s, err := NewHTTPLoad(1, Get(srv.URL, nil)).RunOpen(t.Context(), 50*time.Millisecond, 200)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.Latencies)
	if s.Ops != 10 || s.Latencies[9] < 140*time.Millisecond {
		t.Errorf("ops %d, latencies %v: want 10, the last charged its wait (≥ 140ms)", s.Ops, s.Latencies)
	}
}

// Each worker keeps one connection across requests and slices, and dials again
// when the server closes it.
func TestHTTPLoadKeepsOneConnectionPerWorker(t *testing.T) {
	t.Parallel()
	var conns, requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1)%50 == 0 {
			w.Header().Set("Connection", "close")
		}
		_, _ = w.Write(helloBody)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	load := NewLeanHTTPLoad(3, Get(srv.URL, nil))
	// Slices until the server has closed a connection three times: the
	// count of requests, not a time, makes the test (a busy machine
	// serves fewer in a slice).
	var ops int
	for slices := 0; slices < 2 || requests.Load() < 150; slices++ {
		s, err := load.Run(t.Context(), 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if s.Failed != 0 {
			t.Fatalf("%d failed: %s", s.Failed, s.FirstFailure)
		}
		ops += s.Ops
	}
	if int64(ops) != requests.Load() {
		t.Fatalf("%d operations counted, %d requests served", ops, requests.Load())
	}
	// Three first dials, and one more for every answer that closed its
	// connection, but for a worker's last answer, after which it stopped.
	closes := requests.Load() / 50
	if closes < 3 || conns.Load() > 3+closes || conns.Load() < closes {
		t.Fatalf("%d connections for %d requests (%d closed by the server)", conns.Load(), requests.Load(), closes)
	}
}

// The lean client's own HTTP/1.1: the request arrives whole (method, URI, Host,
// headers, body and its length), and answers framed by length, by chunks (with a
// trailer), with no body (HEAD, 204) or by the end of the connection are each read
// to their end, so the next request on the connection is answered too.
func TestLeanClientSpeaksHTTP(t *testing.T) {
	t.Parallel()
	var bad atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && (string(body) != `{"a":"b"}` || r.ContentLength != 9 || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("X-Api-Key") != "k" || r.URL.RequestURI() != "/p?q=1") {
			bad.Store(fmt.Sprintf("%s %s %q len %d %v", r.Method, r.URL.RequestURI(), body, r.ContentLength, r.Header))
		}
		switch r.URL.Query().Get("answer") {
		case "chunked":
			w.Header().Set("Trailer", "X-Sum")
			_, _ = w.Write([]byte("part one, "))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("part two"))
			w.Header().Set("X-Sum", "2")
		case "empty":
			w.WriteHeader(http.StatusNoContent)
		case "close":
			w.Header().Set("Connection", "close")
			_, _ = w.Write(helloBody)
		default:
			_, _ = w.Write(helloBody)
		}
	}))
	t.Cleanup(srv.Close)

	requests := []func() (*http.Request, error){
		func() (*http.Request, error) {
			req, err := Post(srv.URL+"/p?q=1", http.Header{"X-Api-Key": {"k"}}, []byte(`{"a":"b"}`))(t.Context())
			return req, err
		},
		func() (*http.Request, error) { return http.NewRequest(http.MethodGet, srv.URL+"/?answer=chunked", nil) },
		func() (*http.Request, error) { return http.NewRequest(http.MethodHead, srv.URL+"/", nil) },
		func() (*http.Request, error) { return http.NewRequest(http.MethodGet, srv.URL+"/?answer=empty", nil) },
		func() (*http.Request, error) { return http.NewRequest(http.MethodGet, srv.URL+"/?answer=close", nil) },
	}
	c := &clientConn{}
	for round := range 3 {
		for i, newReq := range requests {
			req, err := newReq()
			if err != nil {
				t.Fatal(err)
			}
			status, err := c.roundTrip(req)
			want := http.StatusOK
			if i == 3 {
				want = http.StatusNoContent
			}
			if err != nil || status != want {
				t.Fatalf("round %d request %d: status %d, %v; want %d", round, i, status, err, want)
			}
		}
		if c.c != nil {
			t.Fatal("the connection the server closed is kept")
		}
	}
	if v := bad.Load(); v != nil {
		t.Fatalf("the server got %v", v)
	}
}

// A rotating load sends its requests in turn, each whole every time, and refuses
// requests it cannot send as one rotation.
func TestRotatingLoadSendsEachRequestInTurn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Method+" "+r.URL.Path+" "+string(body)+" "+r.Header.Get("X-Api-Key")]++
		mu.Unlock()
		_, _ = w.Write(helloBody)
	}))
	t.Cleanup(srv.Close)

	var reqs []*http.Request
	for i := range 3 {
		req, err := Post(fmt.Sprintf("%s/p%d", srv.URL, i), http.Header{"X-Api-Key": {"k"}}, fmt.Appendf(nil, `{"n":%d}`, i))(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	load, err := NewRotatingHTTPLoad(2, reqs)
	if err != nil {
		t.Fatal(err)
	}
	// Slices until 30 answers (a busy machine serves fewer in a slice).
	var s Sample
	for s.Ops < 30 {
		slice, err := load.Run(t.Context(), 100*time.Millisecond)
		if err != nil || slice.Failed != 0 {
			t.Fatalf("sample %+v, %v", slice, err)
		}
		s.Ops += slice.Ops
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for i := range 3 {
		n := seen[fmt.Sprintf(`POST /p%d {"n":%d} k`, i, i)]
		if n < s.Ops/3-2 || n > s.Ops/3+2 {
			t.Errorf("request %d sent %d times of %d: %v", i, n, s.Ops, seen)
		}
		total += n
	}
	if total != s.Ops {
		t.Errorf("%d answers counted, %d requests served as sent: %v", s.Ops, total, seen)
	}

	other := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	if _, err := NewRotatingHTTPLoad(1, append(reqs, other)); err == nil {
		t.Error("a rotation to two addresses was accepted")
	}
	if _, err := NewRotatingHTTPLoad(1, nil); err == nil {
		t.Error("an empty rotation was accepted")
	}
}
