package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// MaxDepth bounds how deeply an operation nests selections (fragments
// counted where they are spread). Introspection fields are not counted:
// the standard introspection query nests type references deeply but
// cheaply.
const MaxDepth = 10

// depthLimit refuses operations that nest deeper than max.
type depthLimit struct{ max int }

var (
	_ graphql.HandlerExtension        = depthLimit{}
	_ graphql.OperationContextMutator = depthLimit{}
)

func (depthLimit) ExtensionName() string { return "DepthLimit" }

func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	if depth := selectionDepth(op.Doc, op.Operation.SelectionSet, map[string]bool{}); depth > d.max {
		err := gqlerror.Errorf("operation is nested %d levels deep; the limit is %d", depth, d.max)
		err.Extensions = map[string]any{"code": "DEPTH_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

// selectionDepth is the depth of the deepest field under set; visiting
// guards against fragment cycles (which validation rejects anyway).
func selectionDepth(doc *ast.QueryDocument, set ast.SelectionSet, visiting map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			d = 1 + selectionDepth(doc, s.SelectionSet, visiting)
		case *ast.InlineFragment:
			d = selectionDepth(doc, s.SelectionSet, visiting)
		case *ast.FragmentSpread:
			if visiting[s.Name] || doc == nil {
				continue
			}
			f := doc.Fragments.ForName(s.Name)
			if f == nil {
				continue
			}
			visiting[s.Name] = true
			d = selectionDepth(doc, f.SelectionSet, visiting)
			delete(visiting, s.Name)
		default:
			panic(fmt.Sprintf("unknown selection %T", sel))
		}
		deepest = max(deepest, d)
	}
	return deepest
}
