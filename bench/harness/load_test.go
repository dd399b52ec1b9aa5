package harness

import (
	"net/http"
	"net/http/httptest"
	"strings"
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
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(helloBody)
	}))
	t.Cleanup(srv.Close)

	load := NewHTTPLoad(4, Get(srv.URL, http.Header{"X-Api-Key": {"k"}}))
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
