package lint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	fuzzFunc   = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	fuzzTarget = regexp.MustCompile(`\./[\w/]+:Fuzz\w+`)
)

// make fuzz runs every fuzz target of the repository: the Makefile's
// FUZZ_TARGETS names each, as package:target, and nothing else.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	t.Parallel()
	const root = "../.."
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found = append(found, "./"+filepath.ToSlash(rel)+":"+m[1])
		}
		return nil
	})
	require.NoError(t, err)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	listed := fuzzTarget.FindAllString(string(makefile), -1)
	slices.Sort(found)
	slices.Sort(listed)
	require.NotEmpty(t, found)
	require.Equal(t, found, listed, "FUZZ_TARGETS in the Makefile lists every fuzz target")
}
