package graph

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"testing"
)

// playgroundBudget bounds the playground's embedded files, compressed:
// with the console's (adapters/edge/dashboard, about 50 KB), the binary's web
// assets stay within the 500 KB of the dashboard issue.
const playgroundBudget = 450 << 10

// GraphiQL, React and the page's own files stay within the budget; the
// test logs what each costs.
func TestPlaygroundWithinBudget(t *testing.T) {
	t.Parallel()
	total := 0
	err := fs.WalkDir(playgroundFiles, "playground", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := playgroundFiles.ReadFile(name)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		total += buf.Len()
		t.Logf("%-45s %8d bytes, %7d compressed", name, len(body), buf.Len())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("total: %d bytes compressed (budget %d)", total, playgroundBudget)
	if total > playgroundBudget {
		t.Fatalf("the playground's files are %d bytes compressed, over the budget of %d", total, playgroundBudget)
	}
}
