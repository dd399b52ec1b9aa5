package bootstrap

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
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

// cronLease is the lease of a cron run's queue job, and cronRescue how
// often the cron runner returns expired ones to the queue: a run whose
// process died is called again within about both.
const (
	cronLease  = 3 * time.Second
	cronRescue = time.Second
)

// cronJobRetention is how long the queue keeps a finished run's job (its
// execution is kept with the account's history): at 10,000 runs a
// minute, a day of them would be 14 million rows.
const cronJobRetention = time.Hour

// cronWakeGap is the least time between two claims of the cron runner
// that wake-ups start (runner.Config.WakeGap): a run triggered by hand is
// called within it; runs due at their slots are claimed at their due time.
const cronWakeGap = 50 * time.Millisecond

// cronModule wires the cron use cases and, when this process runs
// background work, the periodic enqueuer and the runner of the runs. Every
// replica runs both; they share the due jobs and the runs through the
// database. The runs are jobs of the one job queue, with a worker pool of
// their own (--cron-concurrency), as a named queue of their own: a call
// that hangs for its timeout holds a worker of that pool, not a delivery's.
func cronModule(c Config) fx.Option {
	return fx.Module("cron",
		fx.Provide(
			func(db *store.DB) appcron.Store {
				return db.CronStore()
			},
			func() cron.Parser { return cronexpr.New() },
			func(s appcron.Store, p cron.Parser, log *slog.Logger) *appcron.Enqueuer {
				return appcron.NewEnqueuer(appcron.EnqueuerConfig{Store: s, Parser: p, Grace: c.CronGrace, Logger: log})
			},
			fx.Annotate(func(s appcron.Store, g *httpguard.Guard, log *slog.Logger, proc *store.Process) *appcron.Worker {
				owner := workerID("cron")
				if proc != nil {
					// The runs' queue jobs and executions carry the
					// process's id: when it dies, the queue returns them
					// at once (see newProcess).
					owner = proc.ID()
				}
				return appcron.NewWorker(appcron.WorkerConfig{Store: s, Caller: g.NewCronCaller(), Owner: owner, Grace: c.CronGrace, Logger: log})
			}, fx.ParamTags(``, ``, ``, `optional:"true"`)),
			func(s appcron.Store, p cron.Parser, g *httpguard.Guard, enq *appcron.Enqueuer) *appcron.Service {
				wake := func() {}
				if c.RunJobs {
					wake = enq.Wake
				}
				return appcron.NewService(appcron.Deps{Store: s, Parser: p, URLs: g, MaxJobsPerAccount: c.CronMaxJobsPerAccount, Wake: wake})
			},
			fx.Annotate(func(s *appcron.Service) *appcron.Service { return s }, fx.As(new(rest.CronUseCases))),
			fx.Annotate(func(w *appcron.Worker) *appcron.Worker { return w }, fx.As(new(rest.CronTrigger))),
			// The callbacks of runs, posted and signed as the account's
			// webhook deliveries are.
			fx.Annotate(func(w *webhooks.Service) runner.Kind {
				return runner.Kind{Name: appcron.CallbackKind, Handler: appcron.NewCallbacks(w), Timeout: webhook.Timeout + 30*time.Second}
			}, fx.ResultTags(runner.KindGroup)),
		),
		fx.Invoke(func(lc fx.Lifecycle, enq *appcron.Enqueuer) {
			if c.RunJobs {
				runWhileUp(lc, enq.Run)
			}
		}),
		cronRunner(c),
	)
}

// cronRunner runs the cron runs' queue jobs, when this process runs
// background work: a runner of its own, of --cron-concurrency workers
// shared among accounts by --job-account-share. On stop, calls in flight
// finish (within their timeouts) and are recorded; if the stop deadline
// comes first, their leases expire and another runner (or the next to
// start) takes those runs over: calls not yet started are made, calls cut
// off are retried once with the same key.
func cronRunner(c Config) fx.Option {
	if !c.RunJobs {
		return fx.Options()
	}
	return fx.Invoke(func(lc fx.Lifecycle, cfg runner.Config, q runner.Queue, wake runner.Wakeups, w *appcron.Worker) error {
		cfg.Workers, cfg.ClaimBatch, cfg.Pool = c.CronConcurrency, 0, cronPool
		cfg.WorkerID, cfg.RescueInterval = w.Owner(), cronRescue
		// Runs are enqueued ahead of their slots and claimed when due
		// (NextJobAt); the wake-ups of the process's other work would
		// have this runner look for runs at each of their commits.
		cfg.WakeGap = cronWakeGap
		// A finished run's queue job says nothing its execution does not.
		cfg.Retention = cronJobRetention
		r, err := runner.New(q, wake, cfg, runner.Kind{
			Name: appcron.RunKind, Handler: w, Lease: cronLease,
			// The wait for the slot, the call (at most 5 minutes) and
			// the writes around it.
			Timeout: cron.MaxTimeout + time.Minute,
		})
		if err != nil {
			return err
		}
		lc.Append(fx.StartStopHook(r.Start, r.Stop))
		return nil
	})
}

// cronPool is the pool of the cron runs' runners: their account shares
// are shares of the cron workers of every replica.
const cronPool = "cron"

// workerID names a runner in its leases: host, process and a random part.
func workerID(prefix string) string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s-%d-%s", prefix, host, os.Getpid(), hex.EncodeToString(b[:]))
}
