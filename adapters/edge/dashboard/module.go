package dashboard

import (
	"net/http"

	"go.uber.org/fx"
)

// Module provides, named "dashboard", the http.Handler of /dashboard/,
// which the edge's host mounts on its router. It needs Deps from the
// composition root.
var Module = fx.Module("dashboard",
	fx.Provide(
		fx.Annotate(func(d Deps) (http.Handler, error) { return NewHandler(d) }, fx.ResultTags(`name:"dashboard"`)),
	),
)
