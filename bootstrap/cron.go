package bootstrap

import (
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// cronModule wires the cron use cases and, when this process runs
// background work, the scheduler. Every replica runs a scheduler; they
// share the due jobs through the database.
func cronModule(c Config) fx.Option {
	return fx.Module("cron",
		fx.Provide(
			func(db *store.DB) appcron.Store {
				return db.CronStore()
			},
			func() cron.Parser { return cronexpr.New() },
			fx.Annotate(func(s appcron.Store, p cron.Parser, g *httpguard.Guard, log *slog.Logger, proc *store.Process) *appcron.Scheduler {
				cfg := appcron.SchedulerConfig{
					Store: s, Parser: p, Caller: g.NewCronCaller(), Grace: c.CronGrace,
					Concurrency: c.CronConcurrency, AccountShare: c.Fair.AccountShare, Logger: log,
				}
				if proc != nil {
					// Its runs carry the process's id: when the process
					// dies, another scheduler takes them over at once.
					cfg.Owner = proc.ID()
				}
				return appcron.NewScheduler(cfg)
			}, fx.ParamTags(``, ``, ``, ``, `optional:"true"`)),
			func(s appcron.Store, p cron.Parser, g *httpguard.Guard, sched *appcron.Scheduler) *appcron.Service {
				wake := func() {}
				if c.RunJobs {
					wake = sched.Wake
				}
				return appcron.NewService(appcron.Deps{Store: s, Parser: p, URLs: g, MaxJobsPerAccount: c.CronMaxJobsPerAccount, Wake: wake})
			},
			fx.Annotate(func(s *appcron.Service) *appcron.Service { return s }, fx.As(new(rest.CronUseCases))),
			fx.Annotate(func(s *appcron.Scheduler) *appcron.Scheduler { return s }, fx.As(new(rest.CronTrigger))),
			// The callbacks of runs, posted and signed as the account's
			// webhook deliveries are.
			fx.Annotate(func(w *webhooks.Service) runner.Kind {
				return runner.Kind{Name: appcron.CallbackKind, Handler: appcron.NewCallbacks(w), Timeout: webhook.Timeout + 30*time.Second}
			}, fx.ResultTags(runner.KindGroup)),
		),
		fx.Invoke(func(lc fx.Lifecycle, sched *appcron.Scheduler) {
			if !c.RunJobs {
				return
			}
			// Calls in flight finish (within their timeouts) and are
			// recorded; if the stop deadline comes first, their leases
			// expire and another scheduler (or the next to start) takes
			// those runs over: calls not yet started are made, calls cut
			// off are retried once with the same key.
			runWhileUp(lc, sched.Run)
		}),
	)
}
