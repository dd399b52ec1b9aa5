// Package graph is the GraphQL adapter: the schema in schema/*.graphqls, the
// executable schema gqlgen generates from it into generated/ (never edited by
// hand), and the resolvers, which only translate between GraphQL and the use
// cases. Regenerate with `go generate ./graph/...`.
package graph

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/accounts"
)

// AccountReader reads the account a request acts as. *accounts.Service
// implements it.
type AccountReader interface {
	// Overview returns the account with the given id and what it owns. It
	// returns a *failure.Error of kind NotFound when the account does not
	// exist; any other error is an infrastructure failure.
	Overview(ctx context.Context, accountID string) (accounts.Overview, error)
}

var _ AccountReader = (*accounts.Service)(nil)

// Resolver is the root resolver; it holds the use cases the schema reaches.
type Resolver struct {
	accounts AccountReader
}

// NewResolver builds the root resolver over the account use cases.
func NewResolver(accounts AccountReader) *Resolver {
	return &Resolver{accounts: accounts}
}
