package graph_test

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/switchboard-dev/switchboard/graph"
)

// refusals are the codes of an operation that did not run.
var refusals = map[any]bool{
	"GRAPHQL_PARSE_FAILED": true, "GRAPHQL_VALIDATION_FAILED": true, "OPERATION_LIMIT_EXCEEDED": true,
	"DEPTH_LIMIT_EXCEEDED": true, "COMPLEXITY_LIMIT_EXCEEDED": true,
}

// FuzzOperationBounds sends any query text to the GraphQL handler (without
// credentials, so nothing but the checks runs). The handler answers with
// GraphQL errors, never an internal error; and an operation it lets run
// is within every bound, as measured here by a walk of its own that stops
// at the bounds: selections once expanded, fields, aliases, top-level
// fields, nesting.
func FuzzOperationBounds(f *testing.F) {
	for _, q := range []string{
		"{ account { id name } }", introspectionQuery, aliased(31, "account { id }"), "{ account " + aliased(30, "id") + " }",
		"{ threads(first: 50) { edges { node { id messages(first: 5) { edges { node { id } } } } } } }",
		"{ a { b { c { d { e { f { g { h { i { j { k } } } } } } } } } } }",
		"query A { account { id } } query B { account { id } }",
		"fragment F on Query { ...F } { ...F }",
		"{ ...on Query { account { ...on Account { id } } } }",
		doubling(8), doubling(12),
		`mutation { a: sendMessage(input: {service: WHATSAPP, from: "+15550000001", to: "+14155550123", text: "hi"}) { id } }`,
		"{ __schema { types { name fields { name type { ofType { ofType { ofType { name } } } } } } } }",
		"subscription { messages { id } }", "{", "",
	} {
		f.Add(q)
	}
	h := graph.NewHandler(graph.NewResolver(graph.Deps{}))
	f.Fuzz(func(t *testing.T, query string) {
		raw, resp := post(t, h, query)
		ran := true
		for _, e := range resp.Errors {
			code := e.Extensions["code"]
			if code == "internal_error" {
				t.Fatalf("%q: an internal error: %s", query, raw)
			}
			if refusals[code] {
				ran = false
			}
		}
		if !ran {
			return
		}
		doc, err := parser.ParseQuery(&ast.Source{Input: query})
		if err != nil || len(doc.Operations) != 1 {
			return
		}
		m := measure{doc: doc, visiting: map[string]bool{}}
		roots := m.walk(doc.Operations[0].SelectionSet, 1)
		switch {
		case m.selections > graph.MaxExpandedSelections:
			t.Fatalf("%q ran, expanding to more than %d selections", query, graph.MaxExpandedSelections)
		case m.fields > graph.MaxFields, m.aliases > graph.MaxAliases, roots > graph.MaxRootFields, m.depth > graph.MaxDepth:
			t.Fatalf("%q ran with %d fields, %d aliases, %d top-level fields, depth %d", query, m.fields, m.aliases, roots, m.depth)
		}
	})
}

// measure walks an operation with its fragments expanded where they are
// spread, until it has seen more selections than any bound allows.
type measure struct {
	doc                         *ast.QueryDocument
	visiting                    map[string]bool
	selections, fields, aliases int
	depth                       int
}

// walk measures set, whose fields are at level, and returns how many
// fields it selects directly (fragments expanded).
func (m *measure) walk(set ast.SelectionSet, level int) int {
	direct := 0
	for _, sel := range set {
		if m.selections > graph.MaxExpandedSelections {
			return direct
		}
		m.selections++
		switch s := sel.(type) {
		case *ast.Field:
			direct++
			m.fields++
			if s.Alias != "" && s.Alias != s.Name {
				m.aliases++
			}
			if strings.HasPrefix(s.Name, "__") {
				// Introspection nests cheaply and is not counted in depth.
				sub := measure{doc: m.doc, visiting: m.visiting}
				sub.walk(s.SelectionSet, 0)
				m.selections += sub.selections
				m.fields += sub.fields
				m.aliases += sub.aliases
				continue
			}
			m.depth = max(m.depth, level)
			m.walk(s.SelectionSet, level+1)
		case *ast.InlineFragment:
			direct += m.walk(s.SelectionSet, level)
		case *ast.FragmentSpread:
			f := m.doc.Fragments.ForName(s.Name)
			if f == nil || m.visiting[s.Name] {
				continue
			}
			m.visiting[s.Name] = true
			direct += m.walk(f.SelectionSet, level)
			delete(m.visiting, s.Name)
		}
	}
	return direct
}
