// Package e2ebinary hands the end-to-end test packages the switchboard
// executable under test. `make test` builds it once, before the packages
// run, and names it in SWITCHBOARD_TEST_BINARY; a package run on its own
// (go test ./tests/) builds its own copy. Either way the binary carries
// the version Stamp, as a release build stamps its version.
package e2ebinary

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Stamp is the version the binary under test reports.
const Stamp = "v0.0.0-e2e"

// EnvVar names a binary built ahead, with Stamp (make test sets it).
const EnvVar = "SWITCHBOARD_TEST_BINARY"

// Path returns the binary under test: the one EnvVar names, after checking
// that it reports Stamp, or else one built from the repository at root
// into dir.
func Path(root, dir string) (string, error) {
	if built := os.Getenv(EnvVar); built != "" {
		out, err := exec.Command(built, "--version").Output()
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvVar, built, err)
		}
		if !bytes.Contains(out, []byte(Stamp)) {
			return "", fmt.Errorf("%s=%s reports %q, not the version %s the tests expect (build it with -ldflags '-X main.version=%s')",
				EnvVar, built, bytes.TrimSpace(out), Stamp, Stamp)
		}
		return built, nil
	}
	binary := filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+Stamp, "-o", binary, "./cmd/switchboard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build switchboard: %w\n%s", err, out)
	}
	return binary, nil
}
