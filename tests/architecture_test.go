package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
//
// The inbound HTTP edge has one home, adapters/edge: its policy packages
// (edgePolicy) are imported only by the edge itself, its handler sets
// (adapters/edge/<name>), graph (a handler set that lives apart, as the
// design fixes) and the composition root. A handler set never imports
// another, and the policy never imports a handler set.
func TestDependenciesPointInward(t *testing.T) {
	t.Parallel()
	eachSourceFile(t, "..", func(rel string, src []byte) {
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why := forbidden(dir, p); why != "" {
				t.Errorf("%s imports %s: %s", rel, p, why)
			}
		}
	})
}

// eachSourceFile calls check with every non-test Go file below dir (its
// path relative to dir, and its source), and fails when it finds fewer
// than 20.
func eachSourceFile(t *testing.T, dir string, check func(rel string, src []byte)) {
	t.Helper()
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "var" || d.Name() == "bin" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		check(rel, src)
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
		if from, to := edgePart(dir), edgePart(local); to != "" {
			switch {
			case from == "" && layer[0] != "graph":
				return "only the edge, its handler sets and graph import the edge"
			case isEdgePolicy(to) && (from != "" || layer[0] == "graph"):
				return ""
			case from == "" || isEdgePolicy(from):
				return "the edge's policy never imports a handler set"
			case from != to:
				return "a handler set never imports another"
			}
			return ""
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

// edgePolicy are the packages of the edge's policy, which every handler
// set shares: the host (server, router, authentication, limits, request
// log) and the rate-limit engine.
var edgePolicy = []string{"adapters/edge", "adapters/edge/ratelimit"}

// edgePart names the part of the edge that pkg (a directory below the
// module) belongs to: a policy package, the handler set
// "adapters/edge/<name>" of any package below it, or "" outside the edge.
func edgePart(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "adapters/edge")
	if !ok || (rest != "" && rest[0] != '/') {
		return ""
	}
	for _, p := range edgePolicy {
		if pkg == p {
			return p
		}
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	return "adapters/edge/" + name
}

func isEdgePolicy(part string) bool {
	for _, p := range edgePolicy {
		if part == p {
			return true
		}
	}
	return false
}

// TestOneRouter keeps the inbound HTTP edge on one router: only the host
// (adapters/edge) builds one; handler sets register their routes on it.
// cmd may build the router of its separate debug listener.
func TestOneRouter(t *testing.T) {
	t.Parallel()
	eachSourceFile(t, "..", func(rel string, src []byte) {
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "adapters/edge" || strings.HasPrefix(dir, "cmd/") {
			return
		}
		if routers := routersIn(t, rel, src); len(routers) > 0 {
			t.Errorf("%s builds a router (%s): handler sets mount on the edge's host", rel, strings.Join(routers, ", "))
		}
	})
}

// routersIn lists the calls of the source of file to the constructors of
// a serving router: net/http's ServeMux and gorilla/mux's Router.
func routersIn(t *testing.T, file string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	constructors := map[string]string{"net/http": "NewServeMux", "github.com/gorilla/mux": "NewRouter"}
	local := map[string]string{} // the file's name of a package -> its constructor
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if c, ok := constructors[p]; ok {
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = c
		}
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] == sel.Sel.Name {
				found = append(found, x.Name+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return found
}

// inboundHTTP are the net/http names of a server: application/ never uses
// them (it may read the status of an outbound call's response).
var inboundHTTP = map[string]bool{"Request": true, "ResponseWriter": true, "Handler": true, "HandlerFunc": true,
	"Cookie": true, "SetCookie": true, "Server": true, "ServeMux": true}

// TestApplicationHasNoInboundHTTP keeps the edge's policy out of the use
// cases: no package of application/ serves HTTP (inboundHTTP), reads or
// sets a cookie, or holds a rate limiter (a package named ratelimit) or
// CSRF rules (a name containing CSRF).
func TestApplicationHasNoInboundHTTP(t *testing.T) {
	t.Parallel()
	eachSourceFile(t, "../application", func(rel string, src []byte) {
		for _, why := range edgePolicyIn(t, rel, src) {
			t.Errorf("application/%s: %s", rel, why)
		}
	})
}

// edgePolicyIn lists what in the source of file (a path below
// application/) belongs to the HTTP edge.
func edgePolicyIn(t *testing.T, file string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	if strings.HasPrefix(filepath.ToSlash(file), "ratelimit/") || f.Name.Name == "ratelimit" {
		found = append(found, "rate limits belong to the edge (adapters/edge/ratelimit)")
	}
	httpName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "net/http" {
			httpName = "http"
			if imp.Name != nil {
				httpName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && httpName != "" && x.Name == httpName && inboundHTTP[n.Sel.Name] {
				found = append(found, "http."+n.Sel.Name+" belongs to the edge")
			}
		case *ast.Ident:
			if strings.Contains(strings.ToUpper(n.Name), "CSRF") || strings.Contains(strings.ToLower(n.Name), "cookie") {
				found = append(found, n.Name+": sessions' cookie and CSRF rules belong to the edge")
			}
		}
		return true
	})
	return found
}

// The rule must catch what it claims to catch.
func TestForbiddenCatchesViolations(t *testing.T) {
	t.Parallel()
	bad := [][2]string{
		{"domain/account", "go.uber.org/fx"},
		{"domain/account", module + "application/accounts"},
		{"application/accounts", module + "adapters/store"},
		{"application/accounts", "github.com/uptrace/bun"},
		{"adapters/edge/rest", module + "adapters/store"},
		{"adapters/edge/rest", module + "bootstrap"},
		{"adapters/store", module + "graph"},
		{"graph", module + "adapters/edge/rest"},
		{"graph", module + "adapters/store"},
		{"adapters/edge/rest", module + "adapters/edge/mcp"},
		{"adapters/edge/dashboard", module + "adapters/edge/rest/openapitest"},
		{"adapters/edge", module + "adapters/edge/rest"},
		{"adapters/edge/ratelimit", module + "adapters/edge/mcp"},
		{"adapters/store", module + "adapters/edge/ratelimit"},
		{"adapters/jobs", module + "adapters/edge"},
		{"adapters/edgeless", module + "adapters/edge"},
	}
	for _, c := range bad {
		if forbidden(c[0], c[1]) == "" {
			t.Errorf("%s importing %s must be refused", c[0], c[1])
		}
	}
	good := [][2]string{
		{"domain/account", "time"},
		{"application/accounts", module + "domain/failure"},
		{"adapters/edge/rest", module + "application/accounts"},
		{"adapters/edge/rest/openapitest", module + "adapters/edge/rest"},
		{"adapters/edge/rest", module + "adapters/edge"},
		{"adapters/edge/mcp", module + "adapters/edge/ratelimit"},
		{"adapters/edge", module + "adapters/edge/ratelimit"},
		{"graph", module + "adapters/edge"},
		{"graph", module + "adapters/edge/ratelimit"},
		{"bootstrap", module + "adapters/edge/rest"},
		{"adapters/store/dbtest", module + "adapters/store"},
		{"graph", module + "application/accounts"},
		{"bootstrap", module + "adapters/store"},
	}
	for _, c := range good {
		if why := forbidden(c[0], c[1]); why != "" {
			t.Errorf("%s importing %s must be allowed, got %s", c[0], c[1], why)
		}
	}
	for file, src := range map[string]string{
		"sessions/csrf.go":     "package sessions\nfunc CheckCSRF(token string) bool { return false }",
		"sessions/cookie.go":   "package sessions\nimport \"net/http\"\nfunc f(r *http.Request) {}",
		"ratelimit/limiter.go": "package ratelimit",
		"accounts/handler.go":  "package accounts\nimport web \"net/http\"\nvar _ web.Handler",
	} {
		if len(edgePolicyIn(t, file, []byte(src))) == 0 {
			t.Errorf("application/%s must be refused", file)
		}
	}
	if len(routersIn(t, "dashboard/dashboard.go", []byte("package dashboard\nimport \"net/http\"\nvar m = http.NewServeMux()"))) == 0 {
		t.Error("a handler set's own ServeMux must be refused")
	}
	if len(routersIn(t, "rest/server.go", []byte("package rest\nimport gm \"github.com/gorilla/mux\"\nvar r = gm.NewRouter()"))) == 0 {
		t.Error("a handler set's own gorilla/mux router must be refused")
	}
	if found := routersIn(t, "rest/openapitest/openapitest.go", []byte("package openapitest\nimport \"github.com/getkin/kin-openapi/routers/gorillamux\"\nvar r, _ = gorillamux.NewRouter(nil)")); len(found) != 0 {
		t.Errorf("a contract's validation router serves nothing and must be allowed, got %v", found)
	}
	outbound := "package webhooks\nimport \"net/http\"\nfunc gone(status int) bool { return status == http.StatusGone }"
	if why := edgePolicyIn(t, "webhooks/deliver.go", []byte(outbound)); len(why) != 0 {
		t.Errorf("an outbound call's status must be allowed, got %v", why)
	}
}
