package dashboard

import (
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/edge"
)

// Module mounts the dashboard's pages on the edge's host (an edge.Mount of
// group "edge.mounts"). It needs Deps from the composition root.
var Module = fx.Module("dashboard",
	fx.Provide(
		fx.Annotate(func(d Deps) edge.Mount {
			return func(host *edge.Host) error { return Mount(host, d) }
		}, fx.ResultTags(`group:"edge.mounts"`)),
	),
)
