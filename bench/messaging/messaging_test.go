package messaging

import (
	"strings"
	"testing"
	"time"
)

// validID is the rule the server checks ids against before it looks one up (a
// prefix, an underscore, then lower-case letters and digits), and a generated id's
// length: 26 characters after the prefix.
func validID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// e164 is the form the server requires of numbers: a plus, no leading zero, 7 to
// 15 digits.
func e164(number string) bool {
	if len(number) < 8 || len(number) > 16 || number[0] != '+' || number[1] == '0' {
		return false
	}
	for _, c := range number[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func TestSeqIDsAreValidDistinctIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for _, i := range []int{0, 1, 9, 10, 11, 99, 100, 999_999, 1_000_000} {
		for _, prefix := range []string{"msg", "thr"} {
			id := seqID(prefix, i)
			if !validID(prefix, id) {
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
			if !e164(n) {
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
