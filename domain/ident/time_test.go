package ident

import (
	"testing"
	"time"
)

func TestMadeAtReadsTheTimeNewWrote(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 11, 29, 10, 30, 15, 123_000_000, time.UTC)
	id := newAt(Event, when)
	got, ok := MadeAt(Event, id)
	if !ok || !got.Equal(when) {
		t.Fatalf("MadeAt(%q) = %v, %v; want %v", id, got, ok, when)
	}
	for _, bad := range []string{"", "evt_", id[:len(id)-1], "whk" + id[3:], "evt_" + "0000000000" + id[14:]} {
		if _, ok := MadeAt(Event, bad); ok {
			t.Errorf("MadeAt(%q) read a time from what New never makes", bad)
		}
	}
}
