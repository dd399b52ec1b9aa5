package tests

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/switchboard-dev/switchboard/"

// TestDependenciesPointInward enforces the hexagonal rule on every non-test
// file: domain imports only the standard library and domain; application
// adds application; adapters never import graph, bootstrap or a sibling
// adapter; and only adapters, graph, bootstrap and cmd may use fx.
func TestDependenciesPointInward(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "var" || d.Name() == "bin" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why := forbidden(dir, p); why != "" {
				t.Errorf("%s imports %s: %s", rel, p, why)
			}
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d files; is the walk rooted right?", checked)
	}
}

func forbidden(dir, imp string) string {
	layer := strings.SplitN(dir, "/", 3)
	local, isLocal := strings.CutPrefix(imp, module)
	stdlib := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
	switch layer[0] {
	case "domain":
		if stdlib || (isLocal && strings.HasPrefix(local, "domain/")) {
			return ""
		}
		return "domain may import only the standard library and domain"
	case "application":
		if stdlib || (isLocal && (strings.HasPrefix(local, "domain/") || strings.HasPrefix(local, "application/"))) {
			return ""
		}
		return "application may import only the standard library, domain and application"
	case "adapters", "graph":
		if !isLocal {
			return ""
		}
		if strings.HasPrefix(local, "bootstrap") || strings.HasPrefix(local, "cmd/") {
			return "adapters never import the composition root"
		}
		if layer[0] == "adapters" && strings.HasPrefix(local, "graph") {
			return "adapters never import graph"
		}
		if strings.HasPrefix(local, "adapters/") {
			own := "adapters/"
			if layer[0] == "adapters" && len(layer) > 1 {
				own += layer[1]
			}
			if layer[0] == "graph" || (local != own && !strings.HasPrefix(local, own+"/")) {
				return "an adapter never imports a sibling adapter"
			}
		}
	}
	return ""
}

// The rule must catch what it claims to catch.
func TestForbiddenCatchesViolations(t *testing.T) {
	t.Parallel()
	bad := [][2]string{
		{"domain/account", "go.uber.org/fx"},
		{"domain/account", module + "application/accounts"},
		{"application/accounts", module + "adapters/store"},
		{"application/accounts", "github.com/uptrace/bun"},
		{"adapters/rest", module + "adapters/store"},
		{"adapters/rest", module + "bootstrap"},
		{"adapters/store", module + "graph"},
		{"graph", module + "adapters/rest"},
	}
	for _, c := range bad {
		if forbidden(c[0], c[1]) == "" {
			t.Errorf("%s importing %s must be refused", c[0], c[1])
		}
	}
	good := [][2]string{
		{"domain/account", "time"},
		{"application/accounts", module + "domain/failure"},
		{"adapters/rest", module + "application/accounts"},
		{"adapters/rest/openapitest", module + "adapters/rest"},
		{"adapters/store/dbtest", module + "adapters/store"},
		{"graph", module + "application/accounts"},
		{"bootstrap", module + "adapters/store"},
	}
	for _, c := range good {
		if why := forbidden(c[0], c[1]); why != "" {
			t.Errorf("%s importing %s must be allowed, got %s", c[0], c[1], why)
		}
	}
}
