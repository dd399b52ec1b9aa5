package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

func TestScenarioNamesAreUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, sc := range scenarios {
		if seen[sc.Name] {
			t.Errorf("scenario %q registered twice", sc.Name)
		}
		seen[sc.Name] = true
	}
}

// The messaging scenarios drive a deployment on a Postgres database of their own and
// compare with pgbench: on SQLite they must be skipped, with the reason.
func TestMessagingScenariosArePostgresOnly(t *testing.T) {
	t.Parallel()
	n := 0
	for _, sc := range scenarios {
		if !strings.HasPrefix(sc.Name, "messages-") {
			continue
		}
		n++
		if !slices.Equal(sc.Databases, []string{"postgres"}) || sc.Manual {
			t.Errorf("%s: Databases %v, Manual %v; want postgres only, in the default set", sc.Name, sc.Databases, sc.Manual)
		}
	}
	if n != 3 {
		t.Errorf("%d messaging scenarios, want send, read and dispatch", n)
	}
}

// Postgres allows 100 connections. While messages-send's pgbench slice runs, the
// send server's pool stays open, beside the scenario's own pool of 2 and the run's
// shared server (8: the default pool, 4 per CPU and at least 8, on up to 2 CPUs).
func TestSendFitsPostgresConnections(t *testing.T) {
	t.Parallel()
	if total := send.MaxConns + insertOne.Clients + 2 + 8; total > 97 {
		t.Errorf("messages-send may hold %d connections during a baseline slice, over 97 (100 less the superuser reserve)", total)
	}
}

// noisy-neighbour is issue 22's set-up: 5,000 queued events and 50 hanging receivers
// (A's webhook and its cron endpoints), B waited for long enough that a late
// operation is far over the 1 s target, read finely enough to judge it, in rounds
// short enough that -rounds 3 takes minutes.
func TestNoisyNeighbourIsIssue22(t *testing.T) {
	t.Parallel()
	i := slices.IndexFunc(scenarios, func(sc harness.Scenario) bool { return sc.Name == "noisy-neighbour" })
	if i < 0 {
		t.Fatal("noisy-neighbour is not registered")
	}
	sc := scenarios[i]
	if sc.Manual || sc.Latency == nil || len(sc.Databases) != 0 {
		t.Errorf("Manual %v, Latency %v, Databases %v; want a latency scenario in the default set on both databases", sc.Manual, sc.Latency, sc.Databases)
	}
	for _, db := range []string{"postgres", "sqlite"} {
		if p50, ok := sc.Latency.P50[db]; !ok || p50 > time.Second {
			t.Errorf("p50 target on %s: %v (set %v), want at most the issue's 1 s", db, p50, ok)
		}
	}
	if noisy.Queued != 5000 || noisy.CronJobs+1 != 50 || noisy.CronEvery > time.Second {
		t.Errorf("Queued %d, hanging receivers %d, cron due every %s; want 5,000, 50 and at most 1 s", noisy.Queued, noisy.CronJobs+1, noisy.CronEvery)
	}
	if noisy.Timeout < 5*time.Second || noisy.Poll > 50*time.Millisecond {
		t.Errorf("Timeout %s, Poll %s; want at least 5 s and at most 50 ms", noisy.Timeout, noisy.Poll)
	}
	if round := noisy.Window + noisy.Timeout; round > time.Minute {
		t.Errorf("a round takes %s, want at most a minute", round)
	}
}
