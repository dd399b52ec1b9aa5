package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the switchboard executable under test, built once by TestMain
// with its version stamped as a release build stamps it.
var binary string

// stampedVersion is the version TestMain stamps into the binary.
const stampedVersion = "v0.0.0-e2e"

// TestMain builds the binary from the repository root before the tests run
// and removes it afterwards.
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
	binary = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+stampedVersion, "-o", binary, "./cmd/switchboard")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build switchboard: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
