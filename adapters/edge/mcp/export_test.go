package mcp

// Waiting reports how many accounts the live feed listens for and how many
// wait_for_message calls wait, for tests of their ends.
func (h *Handler) Waiting() (accounts, waits int) { return h.feed.listening() }

// Sessions reports how many sessions of accountID are open and how many
// places the account holds (open sessions and reserved places), for tests
// of the cap.
func (h *Handler) Sessions(accountID string) (open, held int) {
	h.sessions.mu.Lock()
	defer h.sessions.mu.Unlock()
	for _, s := range h.sessions.byID {
		if s.accountID == accountID {
			open++
		}
	}
	return open, h.sessions.held[accountID]
}
