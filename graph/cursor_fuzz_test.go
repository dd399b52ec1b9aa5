package graph

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// FuzzCursor holds the thread and email cursors (Query.threads' and
// Query.emails' after) and the offset cursors of the cron and webhook
// listings to their contract. Any cursor either is refused with one
// Invalid field error on after, or decodes to a position whose own cursor
// decodes to it again; and every position survives encode then decode
// exactly.
func FuzzCursor(f *testing.F) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	f.Add(encodeCursor("t", at, "thr_01jd7k3m9x2qz8w4v6y5t0r1s3"), at.UnixNano(), "thr_01jd7k3m9x2qz8w4v6y5t0r1s3", 3)
	f.Add(encodeCursor("e", at, "eml_x"), int64(0), "eml_x|y", 0)
	f.Add(encodeOffset("cron-jobs", 20), int64(-1), "", -1)
	f.Add("dHx8", int64(1), "|", 1<<40)
	f.Add("%%%", int64(1<<62), "x", 7)
	f.Fuzz(func(t *testing.T, cursor string, unixNano int64, id string, offset int) {
		for _, kind := range []string{"t", "e"} {
			gotAt, gotID, err := decodeCursor(kind, "after", cursor)
			if err != nil {
				requireInvalidAfter(t, err)
				continue
			}
			againAt, againID, err := decodeCursor(kind, "after", encodeCursor(kind, gotAt, gotID))
			if err != nil || againID != gotID || !againAt.Equal(gotAt) {
				t.Fatalf("%q decoded to (%s, %q), whose cursor decodes to (%s, %q), %v", cursor, gotAt, gotID, againAt, againID, err)
			}
		}
		if off, err := decodeOffset("cron-jobs", &cursor); err != nil {
			requireInvalidAfter(t, err)
		} else if off < 0 {
			t.Fatalf("%q decoded to the negative offset %d", cursor, off)
		} else if again, err := decodeOffset("cron-jobs", ptr(encodeOffset("cron-jobs", off))); err != nil || again != off {
			t.Fatalf("%q decoded to %d, whose cursor decodes to %d, %v", cursor, off, again, err)
		}

		// Round trips of every position a page hands out.
		if id != "" {
			want := time.Unix(0, unixNano)
			gotAt, gotID, err := decodeCursor("t", "after", encodeCursor("t", want, id))
			if err != nil || gotID != id || !gotAt.Equal(want) {
				t.Fatalf("(%s, %q) came back as (%s, %q), %v", want, id, gotAt, gotID, err)
			}
		}
		if offset >= 0 {
			got, err := decodeOffset("cron-jobs", ptr(encodeOffset("cron-jobs", offset)))
			if err != nil || got != offset {
				t.Fatalf("offset %d came back as %d, %v", offset, got, err)
			}
		}
	})
}

func requireInvalidAfter(t *testing.T, err error) {
	t.Helper()
	fe := failure.As(err)
	if fe == nil || fe.Kind != failure.KindInvalid || len(fe.Fields) != 1 || len(fe.Fields[0].Path) != 1 || fe.Fields[0].Path[0] != "after" {
		t.Fatalf("want one Invalid field error on after, got %#v", err)
	}
}

func ptr(s string) *string { return &s }
