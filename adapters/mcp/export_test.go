package mcp

// Waiting reports how many accounts the live feed listens for and how many
// wait_for_message calls wait, for tests of their ends.
func (h *Handler) Waiting() (accounts, waits int) { return h.feed.listening() }
