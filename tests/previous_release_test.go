package tests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// previousReleaseFile names the commit of the previous release, relative
// to this package's directory.
const previousReleaseFile = "upgrade/PREVIOUS"

var (
	previousOnce sync.Once
	previousBin  string
	previousErr  error
)

// previousRelease returns the switchboard executable of the previous
// release (the commit tests/upgrade/PREVIOUS names), built from this
// clone's history once and cached by commit under the user's cache
// directory (~/.cache/switchboard-previous-release/<commit>/switchboard).
// A commit missing from the clone fails the test: the upgrade it guards
// is not to be skipped.
func previousRelease(t *testing.T) string {
	t.Helper()
	previousOnce.Do(func() { previousBin, previousErr = buildPreviousRelease() })
	if previousErr != nil {
		t.Fatal(previousErr)
	}
	return previousBin
}

func buildPreviousRelease() (string, error) {
	commit, err := readPreviousCommit(previousReleaseFile)
	if err != nil {
		return "", err
	}
	out, err := exec.Command("git", "-C", "..", "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("the previous release %s (named in tests/%s) is not in this clone's history: "+
			"the rolling upgrade test builds it from there (a shallow clone? git fetch --unshallow): %v", commit, previousReleaseFile, err)
	}
	full := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache directory for the previous release's build: %w", err)
	}
	dir := filepath.Join(cache, "switchboard-previous-release", full)
	bin := filepath.Join(dir, "switchboard")
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	src, err := os.MkdirTemp("", "switchboard-previous-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	// git archive | tar -x: the tree of the commit, without a checkout.
	archive := exec.Command("git", "-C", "..", "archive", full)
	untar := exec.Command("tar", "-x", "-C", src)
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return "", fmt.Errorf("tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("git archive %s: %w: %s", full, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("unpack the previous release: %w: %s", err, untarErr.String())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Built beside its final name and renamed, so that a build cut off
	// midway is never taken for a cached one.
	tmp := bin + ".tmp-" + strconv.Itoa(os.Getpid())
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X main.version=v0.0.0-previous-"+full[:8], "-o", tmp, "./cmd/switchboard")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the previous release %s: %w\n%s", full, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// readPreviousCommit reads the commit from file: its first line that is
// neither blank nor a # comment.
func readPreviousCommit(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("read the previous release's commit: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("tests/" + file + " names no commit")
}
