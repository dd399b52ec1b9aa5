package main

import (
	"slices"
	"strings"
	"testing"
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
