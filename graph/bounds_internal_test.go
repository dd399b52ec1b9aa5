package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/stretchr/testify/require"
)

// An answer over MaxResponseBytes is replaced by an error; one at the
// bound goes out as it is.
func TestOversizedAnswersAreRefused(t *testing.T) {
	t.Parallel()
	answer := func(n int) graphql.ResponseHandler {
		data := json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), n-2)) + `"`)
		return func(context.Context) *graphql.Response { return &graphql.Response{Data: data} }
	}
	resp := operationBounds{}.InterceptResponse(context.Background(), answer(MaxResponseBytes))
	require.Len(t, resp.Data, MaxResponseBytes)
	require.Empty(t, resp.Errors)

	resp = operationBounds{}.InterceptResponse(context.Background(), answer(MaxResponseBytes+1))
	require.Empty(t, resp.Data)
	require.Len(t, resp.Errors, 1)
	require.Equal(t, "RESPONSE_TOO_LARGE", resp.Errors[0].Extensions["code"])
}
