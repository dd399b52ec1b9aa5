package accounts

import "context"

type principalKey struct{}

// WithPrincipal returns ctx carrying who the request acts as; the
// authentication middleware of each inbound adapter sets it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal of an authenticated request.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
