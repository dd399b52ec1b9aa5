package mcp

import (
	"net/http"

	"go.uber.org/fx"
)

// Module provides the *Handler and, named "mcp", the same handler as the
// http.Handler the edge's host mounts at /mcp. It needs Deps from the
// composition root, which must also call Close before the HTTP server
// shuts down (a session's event stream stays open until then).
var Module = fx.Module("mcp",
	fx.Provide(
		NewHandler,
		fx.Annotate(func(h *Handler) http.Handler { return h }, fx.ResultTags(`name:"mcp"`)),
	),
)
