package bootstrap

import (
	"context"
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/cache"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/dashboard"
	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/graph"
)

// Options is the production app: every module, bound to the configuration.
func Options(cfg Config) fx.Option {
	return fx.Options(
		core(cfg),
		fx.Provide(
			func(c Config) edge.ServerConfig {
				return edge.ServerConfig{Addr: c.Addr, TLSCertFile: c.TLSCertFile, TLSKeyFile: c.TLSKeyFile, ShutdownTimeout: c.ShutdownTimeout}
			},
			newRegistry,
			newEdgeDeps,
			newIdempotency,
			newRESTDeps,
			fx.Annotate(mountREST, fx.ResultTags(`group:"edge.mounts"`)),
			newLimiters,
		),
		fx.Invoke(registerSharedMetrics),
		jobsModule(cfg),
		retentionModule(cfg),
		accountsModule,
		erasureModule,
		fx.Invoke(watchRevocations),
		messagingModule,
		graphModule,
		channelsModule,
		profilesModule,
		emailModule,
		cronModule(cfg),
		webhooksModule,
		webhooksServing,
		graph.Module,
		mcpModule,
		sessionsModule,
		dashboard.Module,
		edge.Module,
	)
}

// OperatorOptions is the app the operator commands (accounts, keys,
// numbers, webhook, migrate …) run on: the same store, keyring, accounts
// and webhooks modules as serve, without listeners, runners or watchers.
// The database is migrated when the app is built, as serve does. A
// command's output is its own: the app logs warnings and errors only
// (unless debug is asked for).
func OperatorOptions(cfg Config) fx.Option {
	cfg.MigrateOnStart = true
	cfg.DBMaxConns = 4
	cfg.oneShot = true
	if cfg.LogLevel >= slog.LevelInfo && cfg.LogLevel < slog.LevelWarn {
		cfg.LogLevel = slog.LevelWarn
	}
	return fx.Options(
		core(cfg),
		// The server key is checked before the database is opened, so a
		// refused command creates nothing.
		fx.Invoke(func(*keyring.Keyring) {}),
		accountsModule,
		erasureModule,
		webhooksModule,
	)
}

// core is what every app of the binary is built on: the configuration,
// the logger, the store, the keyring, the SSRF guard and the caches.
func core(cfg Config) fx.Option {
	logger := cfg.NewLogger()
	return fx.Options(
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: logger}
			// fx's own events, errors included, stay at debug: start-up
			// errors reach the operator once, as the command's one line.
			l.UseLogLevel(slog.LevelDebug)
			l.UseErrorLevel(slog.LevelDebug)
			return l
		}),
		fx.StopTimeout(cfg.ShutdownTimeout+5*time.Second),
		fx.Supply(cfg, logger),
		fx.Provide(
			func(c Config) store.Config {
				return store.Config{URL: c.DatabaseURL, MaxConns: c.DBMaxConns, MigrateOnStart: c.MigrateOnStart,
					ReadTimeout: c.DBReadTimeout, StatementTimeout: c.DBStatementTimeout, Background: !c.oneShot}
			},
			func(c Config) (*keyring.Keyring, error) { return c.Keyring() },
			func(c Config) *httpguard.Guard {
				return httpguard.New(httpguard.Options{Allow: c.AllowPrivateURLs, Hint: PrivateURLsHint})
			},
			// A credential and a send's lookups are reused for the auth
			// cache TTL.
			func(c Config) *cache.Caches { return cache.New(cache.Options{TTL: c.AuthCacheTTL}) },
		),
		store.Module,
	)
}

// accountsModule binds the store to the account use cases' port and the
// use cases to the ports of the inbound adapters.
var accountsModule = fx.Module("accounts",
	fx.Provide(
		func(db *store.DB) accounts.Store {
			return db.AccountStore()
		},
		func(c Config, s accounts.Store, caches *cache.Caches, k *keyring.Keyring) *accounts.Service {
			return accounts.NewService(caches.Accounts(s), k, accounts.Options{HistoryRetention: c.HistoryRetention})
		},
		fx.Annotate(func(s *accounts.Service) *accounts.Service { return s }, fx.As(new(rest.AccountUseCases)), fx.As(new(graph.AccountReader))),
	),
)

// watchRevocations keeps the auth cache in step with keys revoked on other
// replicas and with the CLI while the app runs.
func watchRevocations(lc fx.Lifecycle, s accounts.Store, caches *cache.Caches, log *slog.Logger) {
	runWhileUp(lc, func(ctx context.Context) { cache.WatchRevocations(ctx, caches.Accounts(s), cache.RevocationPoll, log) })
}

// runWhileUp runs loop on its own goroutine from the app's start until
// its stop, which cancels loop's context and waits for it to return (at
// most until the stop's own deadline).
func runWhileUp(lc fx.Lifecycle, loop func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				loop(ctx)
			}()
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
			case <-stop.Done():
			}
			return nil
		},
	})
}

// jobsModule binds the store to the job runner's ports and runs it, unless
// this process is configured to serve the API only.
func jobsModule(c Config) fx.Option {
	if !c.RunJobs {
		return fx.Options()
	}
	return fx.Options(
		fx.Provide(
			newProcess,
			func(db *store.DB) runner.Queue { return db.JobQueue() },
			func(db *store.DB) runner.Wakeups { return db },
			func(db *store.DB, p *store.Process, reg *prometheus.Registry, log *slog.Logger) runner.Config {
				return runner.Config{
					WorkerID: p.ID(), Liveness: p,
					Logger: log, Workers: c.JobWorkers, Metrics: runner.NewMetrics(reg, db.JobQueue(), nil),
					AccountShare: c.Fair.AccountShare, EndpointLimit: c.Fair.EndpointLimit, EndpointStall: c.Fair.EndpointStall,
					BreakerFailures: c.Fair.BreakerFailures, BreakerOpen: c.Fair.BreakerOpen, BreakerMaxOpen: c.Fair.BreakerMaxOpen,
				}
			},
		),
		runner.Module,
	)
}

// newProcess registers this process in the database's registry of the
// processes that run background work, for as long as the app runs: its job
// leases and cron runs carry its id, and when it dies the other processes
// take them over at once. It stops after the runner and the scheduler
// that use it.
func newProcess(lc fx.Lifecycle, db *store.DB, log *slog.Logger) (*store.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := db.RegisterProcess(ctx, log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(p.Close))
	return p, nil
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// registerSharedMetrics exports the shared transactions' counters (see
// store.DB.Commit): batches per shared transaction is how much group
// commit saves, and redone ones are merged batches that failed and were
// written one by one.
func registerSharedMetrics(db *store.DB, reg *prometheus.Registry) {
	for _, m := range []struct {
		name, help string
		gauge      bool
		value      func(store.SharedStats) int64
	}{
		{"switchboard_db_shared_batches_total", "Shared transactions committed.", false, func(s store.SharedStats) int64 { return s.Batches }},
		{"switchboard_db_shared_units_total", "Units (sends, inbound messages, emails, status changes) committed in shared transactions.", false, func(s store.SharedStats) int64 { return s.Units }},
		{"switchboard_db_shared_redone_total", "Units run again alone after their shared transaction failed.", false, func(s store.SharedStats) int64 { return s.Redone }},
		{"switchboard_db_shared_waiting", "Units waiting for a shared transaction now.", true, func(s store.SharedStats) int64 { return int64(s.Waiting) }},
	} {
		value := func() float64 { return float64(m.value(db.SharedStats())) }
		if m.gauge {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: m.name, Help: m.help}, value))
		} else {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help}, value))
		}
	}
}

// edgeInputs are what the HTTP host is built from: authentication,
// sessions, limits, the idempotency-key protocol, readiness and metrics.
type edgeInputs struct {
	fx.In
	Config      Config
	Accounts    *accounts.Service
	DB          *store.DB
	Limiters    edge.Limiters
	Idempotency *edge.Idempotency
	Sessions    *sessions.Service `optional:"true"`
	CSRF        edge.CSRF         `optional:"true"`
	Registry    *prometheus.Registry
	Logger      *slog.Logger
}

func newEdgeDeps(in edgeInputs) edge.Deps {
	db := in.DB
	d := edge.Deps{
		Accounts:    in.Accounts,
		Idempotency: in.Idempotency,
		Ready:       func(ctx context.Context) error { return db.Ready(ctx) },
		Registry:    in.Registry,
		Logger:      in.Logger,
		Limits:      in.Config.Limits,
		Limiters:    in.Limiters,
	}
	if in.Sessions != nil {
		d.Sessions, d.CSRF = in.Sessions, in.CSRF
	}
	return d
}

// newIdempotency is the idempotency-key protocol of every transport, over
// the database.
func newIdempotency(c Config, db *store.DB, log *slog.Logger) *edge.Idempotency {
	return edge.NewIdempotency(db.IdempotencyKeys(), c.IdempotencyLock, nil, log)
}

// restInputs are the use cases of the REST handler set, bound to the
// ports it declares for them.
type restInputs struct {
	fx.In
	Config    Config
	Accounts  rest.AccountUseCases
	Messaging rest.MessagingUseCases
	Providers rest.ProviderWebhooks
	Email     rest.EmailUseCases
	Cron      rest.CronUseCases
	Trigger   rest.CronTrigger
	Profiles  rest.ProfileUseCases
	Erasure   rest.ErasureUseCases
}

func newRESTDeps(in restInputs) rest.Deps {
	return rest.Deps{
		Accounts:    in.Accounts,
		Messaging:   in.Messaging,
		Providers:   in.Providers,
		Email:       in.Email,
		Cron:        in.Cron,
		CronTrigger: in.Trigger,
		Profiles:    in.Profiles,
		Erasure:     in.Erasure,
		EmailDomain: in.Config.EmailDomain,
	}
}

// mountREST mounts the REST handler set on the host.
func mountREST(d rest.Deps) edge.Mount {
	return func(h *edge.Host) error {
		rest.Mount(h, d)
		return nil
	}
}

// newLimiters builds the request and failure budgets once, for REST and
// GraphQL's WebSockets alike. On Postgres their buckets are in the
// database, so that every replica draws on one budget; a SQLite
// deployment is one process and keeps them in memory.
func newLimiters(c Config, db *store.DB, log *slog.Logger) edge.Limiters {
	var buckets ratelimit.Buckets = ratelimit.NewMemoryBuckets()
	if db.Dialect() == store.Postgres {
		buckets = db.RateBuckets()
	}
	return edge.NewLimiters(c.Limits, buckets, ratelimit.Options{Logger: log})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
