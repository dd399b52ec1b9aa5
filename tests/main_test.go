package tests

import (
	"fmt"
	"os"
	"testing"

	"github.com/switchboard-dev/switchboard/tests/e2ebinary"
)

// binary is the switchboard executable under test (e2ebinary.Path), with
// its version stamped as a release build stamps it.
var binary string

// stampedVersion is the version the binary under test reports.
const stampedVersion = e2ebinary.Stamp

// TestMain finds or builds the binary before the tests run and removes
// what it built afterwards.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if binary, err = e2ebinary.Path("..", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
