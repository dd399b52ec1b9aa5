package bootstrap

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/retention"
)

// retentionModule prunes old history in the processes that run background
// jobs; the pruning lock keeps it to one of them at a time.
func retentionModule(c Config) fx.Option {
	if !c.RunJobs {
		return fx.Options()
	}
	return fx.Options(
		fx.Provide(func(db *store.DB, log *slog.Logger) *retention.Pruner {
			return retention.New(db.RetentionStore(), db.RetentionStore(), retention.Options{
				Retention: c.HistoryRetention, Interval: c.HistoryPruneInterval, Logger: log,
			})
		}),
		fx.Invoke(func(lc fx.Lifecycle, p *retention.Pruner) { runWhileUp(lc, p.Run) }),
	)
}
