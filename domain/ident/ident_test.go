package ident_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/domain/ident"
)

func TestNewIsPrefixedUniqueAndValid(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := ident.New(ident.Message)
		if !ident.Valid(ident.Message, id) {
			t.Fatalf("%q is not valid", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "msg_", "acc_abc", "msg_ABC", "msg_a/b", "msg_" + string(make([]byte, 65))} {
		if ident.Valid(ident.Message, bad) {
			t.Errorf("Valid(msg, %q) must be false", bad)
		}
	}
}
