// Package lint holds checks of the repository's non-Go sources that
// `make lint` runs: the GraphQL schema against the GraphQL specification's
// schema rules (gqlparser's validator, the one gqlgen builds on), the
// example operations of the README and docs/ against that schema, and the
// relative links of those pages.
package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// loadSchema parses and validates every schema file, as a server would.
func loadSchema(t *testing.T) *ast.Schema {
	t.Helper()
	files, err := filepath.Glob("../../graph/schema/*.graphqls")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var sources []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sources = append(sources, &ast.Source{Name: filepath.Base(f), Input: string(b)})
	}
	schema, gqlErr := gqlparser.LoadSchema(sources...)
	if gqlErr != nil {
		t.Fatalf("the schema is invalid: %v", gqlErr)
	}
	return schema
}

func TestSchemaIsValid(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	require.NotNil(t, schema.Query)
	require.NotNil(t, schema.Mutation)
	require.NotNil(t, schema.Subscription)
	// Every type and field of our own says what it is for.
	for name, def := range schema.Types {
		if def.BuiltIn || name[0] == '_' {
			continue
		}
		switch name {
		case "Query", "Mutation", "Subscription":
		default:
			require.NotEmpty(t, def.Description, "type %s has no description", name)
		}
	}
}

// A broken schema must fail the check: the validator is really applied.
func TestSchemaCheckCatchesErrors(t *testing.T) {
	t.Parallel()
	_, err := gqlparser.LoadSchema(&ast.Source{Name: "bad.graphqls", Input: `type Query { thread: Thread }`})
	require.Error(t, err, "an unknown type is refused")
}

var graphqlBlock = regexp.MustCompile("(?s)```graphql\n(.*?)```")

// Every GraphQL operation of the README and of docs/ is valid against the
// schema.
func TestDocsOperationsAreValid(t *testing.T) {
	t.Parallel()
	schema := loadSchema(t)
	count := 0
	for name, text := range markdownPages(t) {
		for _, b := range graphqlBlock.FindAllStringSubmatch(text, -1) {
			count++
			_, errs := gqlparser.LoadQueryWithRules(schema, b[1], rules.NewDefaultRules())
			require.Empty(t, errs, "%s operation:\n%s", name, b[1])
		}
	}
	require.GreaterOrEqual(t, count, 6, "the docs show at least six GraphQL examples")
}
