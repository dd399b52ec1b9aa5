package messaging_test

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// FuzzMessageCursor holds history tokens (REST's before and next_cursor,
// GraphQL's message cursors) to their contract. Any token either is
// refused with one Invalid field error on the named parameter, or yields a
// cursor whose own token parses back to it; and a cursor made from any
// message position survives Token then ParseMessageCursor exactly.
func FuzzMessageCursor(f *testing.F) {
	thread := "thr_01jd7k3m9x2qz8w4v6y5t0r1s3"
	at := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	valid := messaging.MessageCursor{CreatedAt: at, ID: "msg_01jd7k3m9x2qz8w4v6y5t0r1s4"}.Token(thread)
	f.Add(thread, valid, at.UnixNano(), "01jd7k3m9x2qz8w4v6y5t0r1s4")
	f.Add(thread, valid[:len(valid)-3], int64(0), "a")
	f.Add("thr_other", valid, int64(-1), "0")
	f.Add(thread, "", int64(1<<62), "")
	f.Add(thread, "bTF8dGhyX3h8MjAyNi0xMS0yNVQxMDowMDowMFp8bXNnX3h8", int64(1), "z9")
	f.Add(thread, "%%%", int64(1), "x|y")
	f.Fuzz(func(t *testing.T, threadID, token string, unixNano int64, idSuffix string) {
		c, err := messaging.ParseMessageCursor(threadID, token, "before")
		if err != nil {
			requireInvalidOn(t, err, "before")
		} else {
			if !ident.Valid(ident.Message, c.ID) {
				t.Fatalf("token %q parsed to message id %q, not a message id", token, c.ID)
			}
			again, err := messaging.ParseMessageCursor(threadID, c.Token(threadID), "before")
			if err != nil || again.ID != c.ID || !again.CreatedAt.Equal(c.CreatedAt) {
				t.Fatalf("token %q parsed to %+v, whose token parses to %+v, %v", token, c, again, err)
			}
		}

		// Round trip: every position of a message in a thread.
		if !ident.Valid(ident.Thread, threadID) || !ident.Valid(ident.Message, "msg_"+idSuffix) {
			return
		}
		want := messaging.MessageCursor{CreatedAt: time.Unix(0, unixNano), ID: "msg_" + idSuffix}
		got, err := messaging.ParseMessageCursor(threadID, want.Token(threadID), "after")
		if err != nil {
			t.Fatalf("the token of %+v in %s is refused: %v", want, threadID, err)
		}
		if got.ID != want.ID || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("the token of %+v in %s parses to %+v", want, threadID, got)
		}
		if _, err := messaging.ParseMessageCursor(threadID+"x", want.Token(threadID), "after"); err == nil {
			t.Fatalf("the token of %s was accepted for another thread", threadID)
		}
	})
}

// requireInvalidOn checks that err is one Invalid field error on the query
// parameter field.
func requireInvalidOn(t *testing.T, err error, field string) {
	t.Helper()
	fe := failure.As(err)
	if fe == nil || fe.Kind != failure.KindInvalid || len(fe.Fields) != 1 || len(fe.Fields[0].Path) != 1 || fe.Fields[0].Path[0] != field {
		t.Fatalf("want one Invalid field error on %s, got %#v", field, err)
	}
}
