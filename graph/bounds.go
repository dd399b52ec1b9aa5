package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Bounds of one operation, beside the complexity and depth limits. The
// complexity limit prices the data an operation may return, but gqlgen
// leaves introspection out of it, and a field repeated under aliases
// costs its price again only when the field has one: one request of 1,000
// aliased __schema selections answered 43 MB and grew the server by
// 760 MB; one of 500 aliased sendMessage mutations sent 500 messages on
// one rate-limit token. So every operation is also held to:
const (
	// MaxFields bounds the fields an operation selects, introspection
	// included and fragments counted where they are spread (the standard
	// introspection query selects about 200).
	MaxFields = 1000
	// MaxAliases bounds the fields selected under an alias.
	MaxAliases = 30
	// MaxRootFields bounds an operation's top-level fields.
	MaxRootFields = 20
	// MaxIntrospectionRoots bounds its __schema and __type fields: each
	// answers much of the schema (GraphiQL asks for one).
	MaxIntrospectionRoots = 2
	// MaxMutations bounds a mutation's top-level fields, each of which
	// does work a REST request would do alone, and each of which after
	// the first spends a rate-limit token of its own (Deps.Requests).
	MaxMutations = 5
	// MaxResponseBytes bounds the data an answer carries.
	MaxResponseBytes = 4 << 20
	// MaxExpandedSelections bounds the selections (fields, fragment
	// spreads, inline fragments) of an operation with its fragments
	// expanded where they are spread. The other checks, gqlgen's
	// complexity among them, walk that whole expansion, which doubles with
	// every fragment that spreads the next twice: a query of 25 such
	// fragments expands to 2^25 selections. So this bound is checked
	// first, by a walk that stops at it.
	MaxExpandedSelections = 10 * MaxFields
)

// expansionBound refuses an operation whose expansion exceeds
// MaxExpandedSelections; it must run before every other extension that
// walks the operation.
type expansionBound struct{}

var _ graphql.OperationContextMutator = expansionBound{}

func (expansionBound) ExtensionName() string { return "ExpansionBound" }

func (expansionBound) Validate(graphql.ExecutableSchema) error { return nil }

func (expansionBound) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	n := 0
	countExpanded(op.Doc, op.Operation.SelectionSet, map[string]bool{}, &n)
	if n > MaxExpandedSelections {
		err := gqlerror.Errorf("operation expands to more than %d selections, fragments counted where they are spread", MaxExpandedSelections)
		err.Extensions = map[string]any{"code": "OPERATION_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

// countExpanded adds the selections under set to *n, fragments expanded
// where they are spread, and stops once *n passes MaxExpandedSelections;
// visiting guards against fragment cycles (which validation rejects
// anyway).
func countExpanded(doc *ast.QueryDocument, set ast.SelectionSet, visiting map[string]bool, n *int) {
	for _, sel := range set {
		if *n > MaxExpandedSelections {
			return
		}
		*n++
		switch s := sel.(type) {
		case *ast.Field:
			countExpanded(doc, s.SelectionSet, visiting, n)
		case *ast.InlineFragment:
			countExpanded(doc, s.SelectionSet, visiting, n)
		case *ast.FragmentSpread:
			if visiting[s.Name] || doc == nil {
				continue
			}
			if f := doc.Fragments.ForName(s.Name); f != nil {
				visiting[s.Name] = true
				countExpanded(doc, f.SelectionSet, visiting, n)
				delete(visiting, s.Name)
			}
		}
	}
}

// operationBounds refuses operations over the bounds above, before they
// run, and answers that exceed MaxResponseBytes with an error instead.
type operationBounds struct{}

var (
	_ graphql.HandlerExtension        = operationBounds{}
	_ graphql.OperationContextMutator = operationBounds{}
	_ graphql.ResponseInterceptor     = operationBounds{}
)

func (operationBounds) ExtensionName() string { return "OperationBounds" }

func (operationBounds) Validate(graphql.ExecutableSchema) error { return nil }

func (operationBounds) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	c := &selectionCount{doc: op.Doc, visiting: map[string]bool{}}
	roots := c.countOperation(op.Operation.SelectionSet)
	refuse := func(format string, args ...any) *gqlerror.Error {
		err := gqlerror.Errorf(format, args...)
		err.Extensions = map[string]any{"code": "OPERATION_LIMIT_EXCEEDED"}
		return err
	}
	// The top level is counted whole before any field below it, so its
	// bounds are reported exactly; the total stops at MaxFields.
	switch {
	case c.introspection > MaxIntrospectionRoots:
		return refuse("operation selects __schema or __type %d times; the limit is %d", c.introspection, MaxIntrospectionRoots)
	case op.Operation.Operation == ast.Mutation && roots > MaxMutations:
		return refuse("mutation selects %d fields; the limit is %d (each does what a REST request does)", roots, MaxMutations)
	case roots > MaxRootFields:
		return refuse("operation selects %d top-level fields; the limit is %d", roots, MaxRootFields)
	case c.aliases > MaxAliases:
		return refuse("operation selects %d fields under aliases; the limit is %d", c.aliases, MaxAliases)
	case c.fields > MaxFields:
		return refuse("operation selects more than %d fields", MaxFields)
	}
	return nil
}

// InterceptResponse replaces an answer whose data is over MaxResponseBytes
// with an error (the data is not sent).
func (operationBounds) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || len(resp.Data) <= MaxResponseBytes {
		return resp
	}
	err := gqlerror.Errorf("the answer is %d bytes; the limit is %d: select less", len(resp.Data), MaxResponseBytes)
	err.Extensions = map[string]any{"code": "RESPONSE_TOO_LARGE"}
	return &graphql.Response{Errors: gqlerror.List{err}}
}

// selectionCount counts an operation's selections. Below the top level,
// counting stops once it passes MaxFields, so a document whose fragments
// multiply (each spread many times in another spread many times) costs
// little to refuse.
type selectionCount struct {
	doc                            *ast.QueryDocument
	visiting                       map[string]bool
	fields, aliases, introspection int
}

// countOperation counts the operation's selections and returns its
// top-level fields, all of which are counted before anything below them.
func (c *selectionCount) countOperation(set ast.SelectionSet) int {
	var roots []*ast.Field
	c.expand(set, func(f *ast.Field) { roots = append(roots, f) })
	for _, f := range roots {
		c.field(f)
		if f.Name == "__schema" || f.Name == "__type" {
			c.introspection++
		}
	}
	for _, f := range roots {
		c.below(f.SelectionSet)
	}
	return len(roots)
}

// below counts every field under set, stopping past MaxFields.
func (c *selectionCount) below(set ast.SelectionSet) {
	c.expand(set, func(f *ast.Field) {
		if c.fields > MaxFields {
			return
		}
		c.field(f)
		c.below(f.SelectionSet)
	})
}

func (c *selectionCount) field(f *ast.Field) {
	c.fields++
	if f.Alias != "" && f.Alias != f.Name {
		c.aliases++
	}
}

// expand calls visit for each field of set, fragments expanded where they
// are spread; visiting guards against fragment cycles (which validation
// rejects anyway).
func (c *selectionCount) expand(set ast.SelectionSet, visit func(*ast.Field)) {
	for _, sel := range set {
		if c.fields > MaxFields {
			return
		}
		switch s := sel.(type) {
		case *ast.Field:
			visit(s)
		case *ast.InlineFragment:
			c.expand(s.SelectionSet, visit)
		case *ast.FragmentSpread:
			if c.visiting[s.Name] || c.doc == nil {
				continue
			}
			f := c.doc.Fragments.ForName(s.Name)
			if f == nil {
				continue
			}
			c.visiting[s.Name] = true
			c.expand(f.SelectionSet, visit)
			delete(c.visiting, s.Name)
		default:
			panic(fmt.Sprintf("unknown selection %T", sel))
		}
	}
}
