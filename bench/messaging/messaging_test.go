package messaging

import (
	"strings"
	"testing"
	"time"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

func TestSeqIDsAreValidDistinctIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for _, i := range []int{0, 1, 9, 10, 11, 99, 100, 999_999, 1_000_000} {
		for _, prefix := range []string{ident.Message, ident.Thread} {
			id := seqID(prefix, i)
			if !ident.Valid(prefix, id) || len(id) != len(ident.New(prefix)) {
				t.Errorf("seqID(%q, %d) = %q: not a valid id as long as a generated one", prefix, i, id)
			}
			if j, dup := seen[id]; dup {
				t.Errorf("seqID(%q, %d) = seqID of %d = %q", prefix, i, j, id)
			}
			seen[id] = i
		}
	}
	if got := seqID("msg", 42); got != "msg_"+strings.Repeat("a", 24)+"42" {
		t.Errorf("seqID(msg, 42) = %q", got)
	}
	if got, want := seqIDSQL("msg", "i"), "'msg_' || lpad((i)::text, 26, 'a')"; got != want {
		t.Errorf("seqIDSQL = %s, want %s", got, want)
	}
}

func TestNumbersAreE164AndApart(t *testing.T) {
	t.Parallel()
	if agentNumber(0) != "+15550000001" {
		t.Errorf("agent number 0 = %s, want +15550000001", agentNumber(0))
	}
	numbers := map[string]bool{}
	for k := range 3000 {
		for _, n := range []string{agentNumber(k), userNumber(k)} {
			if !account.ValidE164(n) {
				t.Fatalf("%s is not E.164", n)
			}
			if numbers[n] {
				t.Fatalf("%s is both an agent and a user number", n)
			}
			numbers[n] = true
		}
	}
	if got, want := agentNumberSQL("k"), "'+1555' || lpad((1 + k)::text, 7, '0')"; got != want {
		t.Errorf("agentNumberSQL = %s, want %s", got, want)
	}
	if got, want := userNumberSQL("k"), "'+1556' || lpad((k)::text, 7, '0')"; got != want {
		t.Errorf("userNumberSQL = %s, want %s", got, want)
	}
}

// TestSeedMatchesTheUseCase guards the seeding SQL's copies of what queue() writes.
func TestSeedMatchesTheUseCase(t *testing.T) {
	t.Parallel()
	n := account.Number{ID: "num_x", Service: account.WhatsApp}
	if got := appmessaging.PaceKey(n); got != service+":"+n.ID {
		t.Errorf("PaceKey = %q, but seedQueued writes service || ':' || id", got)
	}
	if got := appmessaging.EndpointKey(n); got != service+":"+n.ID {
		t.Errorf("EndpointKey = %q, but seedQueued writes service || ':' || id", got)
	}
	if appmessaging.DeliverKind != "message.deliver" || jobs.StateAvailable != "available" {
		t.Errorf("delivery job kind %q and state %q changed: check seedQueued", appmessaging.DeliverKind, jobs.StateAvailable)
	}
}

func TestTopUpTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		min     int
		fastest float64
		d       time.Duration
		want    int
	}{
		{100_000, 0, 3 * time.Second, 100_000},
		{100_000, 2_000, 3 * time.Second, 100_000},
		{100_000, 20_000, 3 * time.Second, 120_000},
	} {
		if got := topUpTarget(tc.min, tc.fastest, tc.d); got != tc.want {
			t.Errorf("topUpTarget(%d, %v, %s) = %d, want %d", tc.min, tc.fastest, tc.d, got, tc.want)
		}
	}
}
