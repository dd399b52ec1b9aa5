package dashboard

import (
	"sort"
	"testing"
)

// assetBudget bounds the console's embedded files, as sent to a browser
// that takes gzip (the "embedded assets ≤ 500 KB compressed").
const assetBudget = 500 << 10

// The console's scripts, styles and vendored libraries stay within the
// budget; the test logs what each costs.
func TestAssetsWithinBudget(t *testing.T) {
	t.Parallel()
	s, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(s.files))
	for name := range s.files {
		names = append(names, name)
	}
	sort.Strings(names)
	total, raw := 0, 0
	for _, name := range names {
		a := s.files[name]
		sent := len(a.body)
		if a.gzipped != nil {
			sent = len(a.gzipped)
		}
		total += sent
		raw += len(a.body)
		t.Logf("%-40s %7d bytes, %6d sent", name, len(a.body), sent)
	}
	t.Logf("total: %d bytes, %d sent compressed (budget %d)", raw, total, assetBudget)
	if total > assetBudget {
		t.Fatalf("the console's assets are %d bytes compressed, over the budget of %d", total, assetBudget)
	}
}
