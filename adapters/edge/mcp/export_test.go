package mcp

import "context"

// Waiting reports how many accounts the live feed listens for and how many
// wait_for_message calls wait, for tests of their ends.
func (h *Handler) Waiting() (accounts, waits int) { return h.feed.listening() }

// HeldSessions reports how many sessions of accountID this replica holds
// (opened here, or resumed here for a request), for tests of their ends.
func (h *Handler) HeldSessions(accountID string) int { return h.locals.count(accountID) }

// Subscribed reports how many of the sessions this replica holds are
// subscribed to uri, as the database says.
func (h *Handler) Subscribed(ctx context.Context, uri string) int {
	var hashes [][]byte
	for _, s := range h.locals.all() {
		hashes = append(hashes, s.hash)
	}
	got, err := h.deps.Sessions.Subscribers(ctx, hashes, uri)
	if err != nil {
		return -1
	}
	return len(got)
}
