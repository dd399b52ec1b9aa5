package ident

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Ids sort as text in the order they were made, one millisecond apart or
// years apart, which is what keeps new rows on the last page of an index.
func TestIdsMadeLaterSortLater(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	end := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := 0; i < 10000; i++ {
		a := start + rng.Int64N(end-start)
		b := a + 1
		if i%2 == 0 {
			b = a + 1 + rng.Int64N(end-a)
		}
		early, late := newAt(Message, time.UnixMilli(a)), newAt(Message, time.UnixMilli(b))
		if strings.Compare(early, late) >= 0 {
			t.Fatalf("id of %d ms (%s) does not sort before id of %d ms (%s)", a, early, b, late)
		}
	}
}

func TestAlphabetIsInByteOrder(t *testing.T) {
	t.Parallel()
	if len(alphabet) != 32 {
		t.Fatalf("alphabet has %d characters, want 32", len(alphabet))
	}
	for i := 1; i < len(alphabet); i++ {
		if alphabet[i-1] >= alphabet[i] {
			t.Fatalf("alphabet[%d]=%q does not sort before alphabet[%d]=%q", i-1, alphabet[i-1], i, alphabet[i])
		}
	}
}

// Ids made in the same millisecond still differ in their random part.
func TestIdsOfOneMillisecondDiffer(t *testing.T) {
	t.Parallel()
	at := time.Now()
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := newAt(Email, at)
		if seen[id] {
			t.Fatalf("duplicate id %q in one millisecond", id)
		}
		seen[id] = true
	}
}
