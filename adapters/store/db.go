// Package store implements the application's storage ports on bun, with one
// code base for both dialects: Postgres through pgdriver for deployments
// with several replicas, and SQLite (pure Go, no cgo) as the embedded
// default. Infrastructure errors are translated into domain failures here,
// at the edge (unique violation → Conflict, no rows → NotFound).
package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Dialect names the database behind a DB.
type Dialect string

// The supported databases.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DB is an open database. On SQLite it keeps two pools: one connection for
// writes (SQLite allows one writer; queuing writers in Go is cheaper and
// fairer than letting them spin on the file lock) and several read-only
// connections that WAL mode lets run beside the writer. On Postgres both are
// the same pool.
type DB struct {
	dialect Dialect
	write   *bun.DB
	read    *bun.DB
	// sqlitePath is the database file, for the migration lock.
	sqlitePath string
	base       *Conn
	now        func() time.Time
	wake       *wakeHub
	batched    *Batched
	// reactingOn gives the reactions that add to every batch what other
	// features do about its events (Options.Reactions).
	reactingOn ReactingOn
	hooks      preparedHooks
	shared     *committer
	listenOnce sync.Once
	listeners  sync.WaitGroup
	// background lives until Close, for the notifier, the listener and
	// the health watcher.
	background context.Context
	stop       context.CancelFunc
	// connector opens Postgres connections (nil on SQLite), for the
	// health watcher's own; health is its verdict (health.go).
	connector driver.Connector
	health    health
	// migrationConnector opens the Postgres connections migrations run on
	// (nil on SQLite): without the pool's read and statement timeouts, so
	// that a migration is bounded by its context alone.
	migrationConnector driver.Connector
	// processGrace is how long a process's lock stays free before the
	// process counts as dead (Options.ProcessGrace), and deadProcesses
	// the query of the processes known dead (processes.go).
	processGrace  time.Duration
	deadProcesses string
	// zeroDefaults is the schema's zero defaults (sparse.go), nil until
	// read.
	zeroDefaults atomic.Pointer[zeroDefaults]
	// polls is the Postgres session that holds this DB's poll leases
	// (pollleases.go).
	polls pollSession
}

// Options tune Open.
type Options struct {
	// MaxConns bounds the Postgres pool (and the SQLite read pool); 0 picks a
	// default from the number of CPUs.
	MaxConns int
	// Now is the clock stamped on queue rows; time.Now when nil.
	Now func() time.Time
	// SharedLeaders bounds the shared transactions (see DB.Commit)
	// running at once on Postgres; 0 picks a default. SQLite runs one.
	SharedLeaders int
	// SharedQuorum is how many units must wait before a shared
	// transaction starts beside a running one, and SharedStall how long a
	// running one may take before any waiting unit starts one (see
	// committer.mayOverlap); 0 picks the defaults.
	SharedQuorum int
	SharedStall  time.Duration
	// ReadTimeout bounds every wait for a Postgres reply that has no
	// earlier deadline of its own (background work); StatementTimeout is
	// Postgres's statement_timeout, below it so that the server gives up
	// first and the connection stays usable. 0 picks the defaults.
	ReadTimeout      time.Duration
	StatementTimeout time.Duration
	// ProcessGrace is how long, on Postgres, a registered process's lock
	// must stay free before it counts as dead and its work is taken over
	// (see RegisterProcess); DefaultProcessGrace when 0.
	ProcessGrace time.Duration
	// Reactions, when set, add to every batch with events what other
	// features do about them before the batch is written (see
	// ReactingOn); none when nil.
	Reactions ReactingOn
}

// ReactingOn gives the reactions (writes.Reactions) that read on c, the
// connection a batch is written on: inside a transaction (Decide), the
// transaction's. A reaction that read on a connection of its own would
// wait for one while its caller's transaction holds one, and a pool full
// of such transactions would wait on itself until their deadlines.
type ReactingOn func(c *Conn) writes.Reactions

// The defaults of Options' timeouts.
const (
	DefaultReadTimeout      = 10 * time.Second
	DefaultStatementTimeout = 8 * time.Second
)

// Open connects to the database named by rawURL, "sqlite:PATH" or
// "postgres://…", and checks that it answers.
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	maxConns := opts.MaxConns
	if maxConns <= 0 {
		maxConns = 4 * runtime.GOMAXPROCS(0)
		if maxConns < 8 {
			maxConns = 8
		}
	}
	var (
		db  *DB
		err error
	)
	switch {
	case strings.HasPrefix(rawURL, "sqlite:"):
		db, err = openSQLite(strings.TrimPrefix(rawURL, "sqlite:"), maxConns)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		db, err = openPostgres(rawURL, maxConns, opts)
	default:
		return nil, fmt.Errorf("database URL must start with sqlite: or postgres://, got %q", redact(rawURL))
	}
	if err != nil {
		return nil, err
	}
	db.init(opts, maxConns)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.firstPing(pingCtx); err != nil {
		_ = db.Close()
		// Said to an operator starting a process: the driver's cause, not
		// the 503 a request would get.
		if fe, ok := errors.AsType[*failure.Error](err); ok && fe.Err != nil {
			err = fe.Err
		}
		return nil, fmt.Errorf("database %s is unreachable: %w", redact(rawURL), err)
	}
	// Without them every batch INSERT writes every column: slower, as
	// correct. Migrate reads them again.
	_ = db.loadZeroDefaults(pingCtx, db.read)
	return db, nil
}

func openPostgres(rawURL string, maxConns int, opts Options) (*DB, error) {
	if _, err := url.Parse(rawURL); err != nil {
		return nil, fmt.Errorf("database URL is malformed: %w", errors.Unwrap(err))
	}
	readTimeout := cmp.Or(opts.ReadTimeout, DefaultReadTimeout)
	statementTimeout := cmp.Or(opts.StatementTimeout, DefaultStatementTimeout)
	if statementTimeout >= readTimeout {
		return nil, fmt.Errorf("the statement timeout (%s) must be shorter than the read timeout (%s)", statementTimeout, readTimeout)
	}
	// Session settings of the URL stay; statement_timeout is added unless
	// the URL sets it.
	params := maps.Clone(pgdriver.NewConnector(pgdriver.WithDSN(rawURL)).Config().ConnParams)
	if params == nil {
		params = map[string]any{}
	}
	if _, set := params["statement_timeout"]; !set {
		params["statement_timeout"] = statementTimeout.Milliseconds()
	}
	// JIT is off unless the URL sets it. Postgres starts its JIT compiler
	// on a plan's cost estimate, and compiling takes longer than the
	// statements here run: the job claim's recursive account scan is
	// estimated far above jit_above_cost (bench/RESULTS.md has the figures).
	if _, set := params["jit"]; !set {
		params["jit"] = "off"
	}
	// A prepared statement (the hot reads, the reads by a set of ids, the
	// job claim and completions) is planned once per connection, for any
	// values, unless the URL sets plan_cache_mode. Their texts are written for that plan: the
	// states a partial index covers are literals, and limits that shape a
	// plan are in the text. Postgres's default plans each of the first
	// five executions on a connection for its values, and goes on doing
	// so when the values' plans look cheaper: the job claim takes longer
	// to plan than to run.
	if _, set := params["plan_cache_mode"]; !set {
		params["plan_cache_mode"] = "force_generic_plan"
	}
	connector := postgresConnector(rawURL, readTimeout, params)
	// Migrations (an index built over a large table) may run longer than
	// any request: their connections have no read timeout and, unless the
	// URL sets one, no statement timeout.
	migrationParams := maps.Clone(params)
	if _, set := pgdriver.NewConnector(pgdriver.WithDSN(rawURL)).Config().ConnParams["statement_timeout"]; !set {
		migrationParams["statement_timeout"] = int64(0)
	}
	migrationConnector := postgresConnector(rawURL, 0, migrationParams)
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	bdb := bun.NewDB(sqldb, pgdialect.New())
	db := &DB{dialect: Postgres, write: bdb, read: bdb, connector: connector, migrationConnector: migrationConnector}
	db.base = &Conn{read: bdb, write: bdb, dialect: Postgres, stmts: newStmtCache(sqldb), scanner: bdb}
	return db, nil
}

// postgresConnector opens guarded Postgres connections to rawURL with
// the session settings params; readTimeout bounds each wait for a reply
// that has no earlier deadline of its own (0: only the context's).
func postgresConnector(rawURL string, readTimeout time.Duration, params map[string]any) *guardedConnector {
	pg := pgdriver.NewConnector(
		pgdriver.WithDSN(rawURL),
		pgdriver.WithDialTimeout(5*time.Second),
		pgdriver.WithReadTimeout(readTimeout),
		pgdriver.WithApplicationName("switchboard"),
		pgdriver.WithConnParams(params),
	)
	return &guardedConnector{connect: closingFailedDials(pg), drv: pg.Driver(), rules: postgresRules{}}
}

// closingFailedDials connects with pg and, when the connection fails after
// its dial (a handshake that timed out, a session setting refused), closes
// the socket it dialled. pgdriver v1.2.18 returns such errors without
// closing it; the socket then waited for the garbage collector, and once
// the database answered again each one held a backend: a 15 s stall left
// dozens behind, and the database's connection slots ran short just as
// it came back.
func closingFailedDials(pg *pgdriver.Connector) func(context.Context) (driver.Conn, error) {
	dial := pg.Config().Dialer
	pg.Config().Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if d, ok := ctx.Value(dialedKey{}).(*net.Conn); ok {
			*d = nc
		}
		return nc, err
	}
	return func(ctx context.Context) (driver.Conn, error) {
		var dialed net.Conn
		cn, err := pg.Connect(context.WithValue(ctx, dialedKey{}, &dialed))
		if err != nil && dialed != nil {
			_ = dialed.Close()
		}
		return cn, err
	}
}

// dialedKey carries, in a connect's context, where its dial leaves the
// socket (closingFailedDials).
type dialedKey struct{}

// init finishes what both dialects share: the clock, the wake-up hub and
// its notifier.
func (db *DB) init(opts Options, maxConns int) {
	db.write.AddQueryHook(hookDispatch{&db.hooks})
	if db.read != db.write {
		db.read.AddQueryHook(hookDispatch{&db.hooks})
	}
	db.now = opts.Now
	db.processGrace = cmp.Or(opts.ProcessGrace, DefaultProcessGrace)
	db.deadProcesses = deadProcessesSQL(db.dialect, db.processGrace)
	db.reactingOn = opts.Reactions
	if db.now == nil {
		db.now = time.Now
	}
	sharedLeaders := opts.SharedLeaders
	if db.dialect == SQLite {
		sharedLeaders = 1
	} else if sharedLeaders <= 0 {
		// Two batches in flight for common pools: one runs while the other
		// commits, and each shares its commit among many units.
		sharedLeaders = max(2, maxConns/32)
	}
	db.shared = newCommitter(db, sharedLeaders, maxSharedBatch, opts.SharedQuorum, opts.SharedStall)
	db.wake = newWakeHub(db.dialect == Postgres)
	db.batched = newBatched(db)
	db.background, db.stop = context.WithCancel(context.Background())
	db.base.db = db
	if db.dialect == Postgres {
		go db.runNotifier(db.background)
	}
}

func openSQLite(path string, readers int) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite database URL needs a file path, e.g. sqlite:./var/switchboard.db")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	// WAL lets readers run beside the writer; FULL sync makes every commit
	// survive a power cut, which is what "accepted" promises; busy_timeout
	// covers other processes (the CLI) holding the lock briefly.
	common := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + common
	writeDB := openGuardedSQLite(dsn + "&_txlock=immediate")
	writeDB.SetMaxOpenConns(1)
	writeDB.SetMaxIdleConns(1)
	writeDB.SetConnMaxIdleTime(0)
	readDB := openGuardedSQLite(dsn + "&_pragma=query_only(1)")
	readDB.SetMaxOpenConns(readers)
	readDB.SetMaxIdleConns(readers)
	w, r := bun.NewDB(writeDB, sqlitedialect.New()), bun.NewDB(readDB, sqlitedialect.New())
	db := &DB{dialect: SQLite, write: w, read: r, sqlitePath: path}
	db.base = &Conn{read: r, write: w, dialect: SQLite, stmts: newStmtCache(readDB), scanner: r}
	return db, nil
}

// openGuardedSQLite opens a pool of guarded SQLite connections to dsn.
func openGuardedSQLite(dsn string) *sql.DB {
	drv := &sqlite.Driver{}
	return sql.OpenDB(&guardedConnector{
		connect: func(context.Context) (driver.Conn, error) { return drv.Open(dsn) },
		drv:     drv,
		rules:   sqliteRules{},
	})
}

// firstPing checks that a new DB answers. Replicas starting together on a
// new SQLite file race to switch it to WAL, and SQLite answers that race
// with SQLITE_BUSY at once instead of waiting for busy_timeout; the loser
// tries again shortly, as it would for any lock held briefly.
func (db *DB) firstPing(ctx context.Context) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := db.Ping(ctx)
		if err == nil || db.dialect != SQLite || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// Dialect tells which database this is.
func (db *DB) Dialect() Dialect { return db.dialect }

// Bun exposes the writer pool to sibling code in this package's tests and to
// the migrator.
func (db *DB) Bun() *bun.DB { return db.write }

// Ping checks that the database answers (both pools on SQLite).
func (db *DB) Ping(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, "SELECT 1"); err != nil {
		return err
	}
	if db.read != db.write {
		if _, err := db.read.ExecContext(ctx, "SELECT 1"); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every pool.
func (db *DB) Close() error {
	db.stop()
	db.listeners.Wait()
	db.base.stmts.close()
	err := db.write.Close()
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// Transact runs fn in one transaction, committed when fn returns nil and
// rolled back otherwise (a panic rolls back too, then propagates). On SQLite
// the transaction begins IMMEDIATE, taking the write lock up front, so two
// transactions never deadlock upgrading from read to write.
func (db *DB) Transact(ctx context.Context, fn func(ctx context.Context, r *Conn) error) error {
	state := &txState{}
	err := db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		r := &Conn{read: tx, write: tx, dialect: db.dialect, scanner: db.write, db: db, tx: state}
		return fn(ctx, r)
	})
	db.afterCommit(state, err)
	return err
}

// afterCommit does what a transaction's repositories left for after its
// commit (err nil) or rollback.
func (db *DB) afterCommit(state *txState, err error) {
	if err == nil && state.enqueued {
		db.wake.signal()
	}
}

// txState is what a transaction's repositories note for after the commit.
type txState struct {
	// enqueued: jobs or events were written; the runners and the live
	// readers are woken after the commit.
	enqueued bool
}

// redact hides the password of a database URL in messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
