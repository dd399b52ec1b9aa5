package main

import (
	"net/http"
	"testing"
)

func TestDebugListenerIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060", "nonsense"} {
		if stop, _, err := serveDebug(addr); err == nil {
			stop()
			t.Errorf("serveDebug(%q) accepted a non-loopback address", addr)
		}
	}
}

func TestDebugListenerServesProfiles(t *testing.T) {
	stop, addr, err := serveDebug("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
}
