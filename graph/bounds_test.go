package graph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// introspectionQuery is GraphiQL's introspection query, which the
// playground sends: it must stay within every bound.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

func TestIntrospectionStaysAvailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, resp := post(t, authenticated(b.handler, principal), introspectionQuery)
	require.Empty(t, resp.Errors, raw)
	require.Contains(t, string(resp.Data), `"queryType":{"name":"Query"}`)
}

// aliased repeats field under n aliases in one operation.
func aliased(n int, field string) string {
	var q strings.Builder
	q.WriteString("{")
	for i := range n {
		fmt.Fprintf(&q, " a%d: %s", i, field)
	}
	q.WriteString(" }")
	return q.String()
}

// doubling is an operation of n fragments, each spreading the next twice:
// a few hundred bytes that expand to 2^n selections.
func doubling(n int) string {
	var q strings.Builder
	q.WriteString("{ account { ...F0 } }\n")
	for i := range n {
		fmt.Fprintf(&q, "fragment F%d on Account { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&q, "fragment F%d on Account { id }\n", n)
	return q.String()
}

// Each abuse the issue measured, and the ones next to it, is refused before
// anything runs.
func TestOperationsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := authenticated(b.handler, principal)
	cases := []struct {
		name, query, message string
	}{
		{"1,000 aliased introspections", aliased(1000, "__schema { types { name fields { name } } }"), "__schema or __type 1000 times"},
		{"introspection three times", `{ a: __schema { queryType { name } } b: __schema { queryType { name } } c: __type(name: "Query") { name } }`,
			"__schema or __type 3 times"},
		{"31 aliases", "{ account " + aliased(31, "id") + " }", "31 fields under aliases; the limit is 30"},
		{"21 top-level fields", "{ " + strings.Repeat("account { id } ", 21) + "}", "21 top-level fields; the limit is 20"},
		{"6 mutations", "mutation {" + strings.Repeat(` sendMessage(input: {service: WHATSAPP, from: "+15550000001", to: "+14155550123", text: "hi"}) { id }`, 6) + " }",
			"mutation selects 6 fields; the limit is 5"},
		{"over 1,000 fields", "{ account { " + strings.Repeat("id ", 1001) + "} }", "more than 1000 fields"},
		{"fragments multiplying", `{ account { ...A } }
			fragment A on Account { ...B ...B ...B ...B ...B ...B ...B ...B ...B ...B }
			fragment B on Account { ...C ...C ...C ...C ...C ...C ...C ...C ...C ...C }
			fragment C on Account { id name createdAt id name createdAt id name createdAt id }`, "more than 1000 fields"},
		// Found by FuzzOperationBounds' seed: each check walked the whole
		// expansion, 2^22 selections here, for seconds of CPU.
		{"fragments doubling", doubling(22), "expands to more than 10000 selections"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := b.calls.Load()
			raw, resp := post(t, h, c.query)
			require.Len(t, resp.Errors, 1, raw)
			require.Equal(t, "OPERATION_LIMIT_EXCEEDED", resp.Errors[0].Extensions["code"], raw)
			require.Contains(t, resp.Errors[0].Message, c.message)
			require.True(t, len(resp.Data) == 0 || string(resp.Data) == "null", "nothing ran: %s", raw)
			require.Equal(t, before, b.calls.Load(), "a resolver ran")
		})
	}
}

// Up to each bound, operations run.
func TestOperationsWithinTheBoundsRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := authenticated(b.handler, principal)
	for _, q := range []string{
		aliased(20, "account { id }"),
		"{ account " + aliased(30, "id") + " }",
		`{ a: __schema { queryType { name } } b: __type(name: "Query") { name } }`,
	} {
		raw, resp := post(t, h, q)
		require.Empty(t, resp.Errors, raw)
	}
}
