package webhooks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// B's operations not done within the timeout count at the timeout: the p99 figure is
// then over target, says it is a lower bound, and the late ones are counted.
func TestNoisyFiguresCountLateOperations(t *testing.T) {
	t.Parallel()
	nb := &neighbours{Noisy: Noisy{Timeout: 10 * time.Second, Poll: 20 * time.Millisecond, CronJobs: 49}, measured: 10 * time.Second,
		noisyHooks: 20, noisyCron: 490, lateSends: map[string]time.Time{}}
	for i := range 100 {
		nb.hooks = append(nb.hooks, time.Duration(i+1)*time.Millisecond)
		nb.sends = append(nb.sends, 10*time.Second)
	}
	for i := range 100 {
		nb.lateSends[fmt.Sprint("msg_", i)] = time.Now()
	}
	got := map[string]harness.Figure{}
	for _, f := range nb.latencyFigures() {
		got[f.Name] = f
	}
	check := func(name string, value float64, verdict string) {
		t.Helper()
		f, ok := got[name]
		if !ok {
			t.Fatalf("no figure %q in %v", name, got)
		}
		if f.Value != value || f.Verdict() != verdict {
			t.Errorf("%s = %v (%q), want %v (%q)", name, f.Value, f.Verdict(), value, verdict)
		}
	}
	check("B webhook p50", 50, "")
	check("B webhook p99", 99, "ok")
	check("B webhook max", 100, "")
	check("B webhook late (> 10s)", 0, "")
	check("B send p99", 10000, "OVER TARGET")
	check("B send late (> 10s)", 100, "")
	check("A webhook POSTs received", 2, "")
	check("A cron calls received", 49, "")
	if d := got["B send p99"].Detail; !strings.Contains(d, "100 of 100 not done within 10s") || !strings.Contains(d, "lower bounds") {
		t.Errorf("B send p99 detail %q does not say the percentiles are lower bounds", d)
	}
	if d := got["B webhook p99"].Detail; strings.Contains(d, "lower bounds") {
		t.Errorf("B webhook p99 detail %q calls a complete measurement a lower bound", d)
	}
}

// With nothing measured, the p99 figures are errors, not zeros that pass.
func TestNoisyFiguresWithoutOperations(t *testing.T) {
	t.Parallel()
	nb := &neighbours{Noisy: Noisy{Timeout: 10 * time.Second}}
	n := 0
	for _, f := range nb.latencyFigures() {
		if f.Error == "" {
			t.Errorf("figure %s = %v without operations", f.Name, f.Value)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d figures without operations, want the two p99 errors", n)
	}
}

// A late delivery that arrived after its round is counted done by the end; the
// others' wait is reported.
func TestNoisyLateFiguresFollowLateDeliveries(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(-time.Minute)
	rc := harness.NewReceiver(true)
	rc.Note("msg_1", time.Now())
	nb := &neighbours{rc: rc, lateHooks: map[string]time.Time{"msg_1": start, "msg_2": start}}
	figs := nb.lateFigures(t.Context())
	if len(figs) != 1 {
		t.Fatalf("figures %+v, want one of B's webhooks", figs)
	}
	f := figs[0]
	if f.Name != "B webhook late, done by the end" || f.Value != 1 || !strings.Contains(f.Detail, "of 2 late; the oldest of the 1 still waiting had waited 1m0s") {
		t.Errorf("figure %+v", f)
	}
}
