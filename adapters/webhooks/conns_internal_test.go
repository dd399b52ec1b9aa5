package webhooks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A kept connection the receiver closed while it sat idle is noticed when
// taken, and a new one is dialed, rather than a request being sent into it.
func TestIdleConnectionClosedByTheReceiverIsNotReused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	p := &connPool{dial: (&net.Dialer{}).DialContext, idleCheck: time.Nanosecond}
	tg, err := parseTarget(srv.URL + "/hook")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if a, err := p.post(ctx, tg, nil, []byte("{}"), 10, 10); err != nil || a.status != http.StatusNoContent {
		t.Fatalf("first post: %+v, %v", a, err)
	}
	c, reused, err := p.get(ctx, tg)
	if err != nil || !reused {
		t.Fatalf("the kept connection is reused while open: reused=%v, %v", reused, err)
	}
	p.put(tg.key, c)
	srv.CloseClientConnections()
	// Taken again until the close has reached this side (at once on
	// loopback, but not within any fixed time): then never reused.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, reused, err := p.get(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		if !reused {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a connection the receiver closed was still taken for reuse after 5 s")
		}
		p.put(tg.key, c)
		time.Sleep(time.Millisecond)
	}
}
