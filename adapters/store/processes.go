package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// Process liveness.
//
// A process that runs background work registers itself in the processes
// table and holds a lock that dies with it: on Postgres a session-level
// advisory lock on a connection of its own, which Postgres releases the
// moment that connection ends; on SQLite an flock on a file beside the
// database, which the kernel releases the moment the process ends. Its
// claims (jobs.lease_owner, cron_executions.lease_owner) carry its id.
// Every process looks at the others' locks every processCheckInterval:
//
//   - On SQLite a free lock means a dead process: a file lock is let go
//     only by its process's end. Its row is marked (suspected_at) at once.
//   - On Postgres a free lock means that the process's lock connection
//     ended: the process died, or the database restarted, failed over or
//     dropped the connection while the process lives. The first free
//     sighting is stamped in suspected_at on the database clock; the
//     process is dead once its lock is still free a grace period
//     (Options.ProcessGrace) later. A living process checks its lock
//     connection every processCheckInterval and, when it has ended, takes
//     its lock again and clears the stamp, well within the grace period:
//     a restart of the database makes no process take another's work.
//
// The clocks of the replicas play no part: the grace period is measured
// on the database's clock (Postgres) or not at all (SQLite). The work of
// a dead process is rescued at once (JobQueue.RescueDeadWorkers, the cron
// take-over); leases are for a process that lives but stalls, or one cut
// off from a database that has not dropped its connection yet (its TCP
// keepalive), and for the owners of older builds, which do not register.

// processClass is the first key of the processes' advisory locks on
// Postgres ("SWBD" in ASCII); the second is the row's lock_key. Two-key
// locks never meet the one-key locks of migrations and pruning.
const processClass = 0x53574244

// The rhythm of liveness.
const (
	// DefaultProcessGrace is how long, on Postgres, a process's lock must
	// stay free before the process counts as dead: far longer than a
	// living process takes to notice a dropped lock connection and take
	// its lock again (processCheckInterval, then a connect).
	DefaultProcessGrace = 1500 * time.Millisecond
	// processCheckInterval is how often a process checks its own lock
	// connection and looks at the others' locks.
	processCheckInterval = 250 * time.Millisecond
	// processPingTimeout bounds a check of the lock connection. A check
	// that fails ends the connection (and so the lock, until taken
	// again): a slow answer is waited for rather than taken for a loss.
	processPingTimeout = 5 * time.Second
	// processRetention is how long a dead process's row is kept, and
	// processSweepInterval how often such rows are deleted.
	processRetention     = time.Hour
	processSweepInterval = time.Minute
)

// pgNowMicros is the database clock in unix microseconds.
const pgNowMicros = `(extract(epoch FROM statement_timestamp()) * 1000000)::bigint`

// pgHeldProcessLocks are the lock keys of the processes whose lock is held
// in this database now, as a column objid.
var pgHeldProcessLocks = `SELECT objid::bigint AS objid FROM pg_locks WHERE locktype = 'advisory' AND classid = ` +
	strconv.Itoa(processClass) + ` AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// deadProcessesSQL is the query of the ids of the processes known dead,
// for a dialect and a grace period: a statement that takes their work
// over runs it as a subquery, so a process that took its lock again a
// moment before is not among them.
func deadProcessesSQL(d Dialect, grace time.Duration) string {
	if d == SQLite {
		return `SELECT id FROM processes WHERE suspected_at IS NOT NULL`
	}
	return `SELECT id FROM processes WHERE suspected_at <= ` + pgNowMicros + ` - ` + strconv.FormatInt(grace.Microseconds(), 10) +
		` AND lock_key NOT IN (` + pgHeldProcessLocks + `)`
}

// Process is this process's registration: its id, which its claims carry,
// and the lock that tells the others it lives. Close it before the DB.
type Process struct {
	db   *DB
	id   string
	host string
	pid  int
	log  *slog.Logger

	// lockDB and lockConn hold the Postgres lock's session; nil while it
	// is lost. Only the keeper touches them after Register.
	lockDB   *bun.DB
	lockConn *bun.Conn
	// lockFile holds the SQLite lock (flock).
	lockFile *os.File

	// mu guards subs, dead and lastSweep.
	mu   sync.Mutex
	subs map[*processSubscriber]struct{}
	// dead are the processes found dead at the last look (Postgres), so
	// that each death is told once.
	dead      map[string]bool
	lastSweep time.Time
	outage    *outage.Tracker

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

type processSubscriber struct {
	deaths, returned chan struct{}
}

// RegisterProcess registers this process, takes its lock and looks once at
// the other processes (so that a rescue made right after sees those that
// died before), then keeps the lock and keeps looking until Close.
func (db *DB) RegisterProcess(ctx context.Context, log *slog.Logger) (*Process, error) {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	p := &Process{
		db: db, id: ident.New(ident.Process), host: host, pid: os.Getpid(), log: log,
		subs: map[*processSubscriber]struct{}{}, dead: map[string]bool{},
		outage: outage.NewTracker(log, "process liveness", processCheckInterval, 0),
	}
	if err := p.lock(ctx); err != nil {
		return nil, fmt.Errorf("register this process: %w", err)
	}
	if err := p.observe(ctx); err != nil {
		p.unlock()
		return nil, fmt.Errorf("look at the other processes: %w", err)
	}
	kctx, cancel := context.WithCancel(db.background)
	p.stop, p.done = cancel, make(chan struct{})
	go p.keep(kctx)
	return p, nil
}

// ID is the process's id, which its claims carry.
func (p *Process) ID() string { return p.id }

// Subscribe tells of what the process learns: deaths receives when other
// processes were found dead (their work can be rescued now), returned when
// this process took its lock again after its lock connection ended (other
// processes may have taken its work meanwhile if that took longer than the
// grace period). Both coalesce. cancel ends the subscription.
func (p *Process) Subscribe() (deaths, returned <-chan struct{}, cancel func()) {
	s := &processSubscriber{deaths: make(chan struct{}, 1), returned: make(chan struct{}, 1)}
	p.mu.Lock()
	p.subs[s] = struct{}{}
	p.mu.Unlock()
	return s.deaths, s.returned, func() {
		p.mu.Lock()
		delete(p.subs, s)
		p.mu.Unlock()
	}
}

func (p *Process) tell(returned bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		ch := s.deaths
		if returned {
			ch = s.returned
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Close stops looking, marks the process dead (what it leaves running is
// taken over at once) and lets its lock go.
func (p *Process) Close(ctx context.Context) error {
	var err error
	p.closeOnce.Do(func() {
		p.stop()
		<-p.done
		if p.db.dialect == SQLite {
			_, err = p.db.write.NewRaw(`UPDATE processes SET suspected_at = ? WHERE id = ?`, micros(p.db.now()), p.id).Exec(ctx)
		} else {
			_, err = p.db.write.NewRaw(`UPDATE processes SET suspected_at = `+pgNowMicros+` - ? WHERE id = ?`,
				p.db.processGrace.Microseconds(), p.id).Exec(ctx)
		}
		if err != nil {
			err = fmt.Errorf("mark this process stopped: %w", err)
		}
		if p.lockConn != nil {
			// Let the lock go now: the session's end that closing the
			// connection brings comes a moment later.
			_, _ = p.lockConn.ExecContext(ctx, "SELECT pg_advisory_unlock_all()")
		}
		p.unlock()
	})
	return err
}

// keep checks the lock and looks at the others every
// processCheckInterval until ctx ends.
func (p *Process) keep(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(processCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p.db.dialect == Postgres && !p.keepLock(ctx) {
			continue
		}
		if err := p.observe(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.outage.Failed(err)
			continue
		}
		p.outage.Succeeded()
	}
}

// keepLock checks the Postgres lock's session, and takes the lock again
// on a new one when it ended. It reports whether the lock is held.
func (p *Process) keepLock(ctx context.Context) bool {
	if p.lockConn != nil {
		pctx, cancel := context.WithTimeout(ctx, processPingTimeout)
		_, err := p.lockConn.ExecContext(pctx, "SELECT 1")
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		p.log.Warn("this process's lock connection to the database ended; registering again", "process", p.id, "error", err.Error())
		p.unlock()
	}
	lctx, cancel := context.WithTimeout(ctx, processPingTimeout)
	err := p.lock(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			p.outage.Failed(fmt.Errorf("register this process again: %w", err))
		}
		return false
	}
	p.log.Info("this process registered again", "process", p.id)
	p.tell(true)
	return true
}

// errLockHeld is a lock still held by this process's previous session,
// which the database has not seen end yet.
var errLockHeld = errors.New("the process lock is still held by an earlier session")

// lock registers the process (again) and takes its lock.
func (p *Process) lock(ctx context.Context) error {
	if p.db.dialect == SQLite {
		return p.lockSQLite(ctx)
	}
	sqldb := sql.OpenDB(p.db.connector)
	sqldb.SetMaxOpenConns(1)
	sqldb.SetMaxIdleConns(1)
	sqldb.SetConnMaxIdleTime(0)
	sqldb.SetConnMaxLifetime(0)
	bdb := bun.NewDB(sqldb, pgdialect.New())
	conn, err := bdb.Conn(ctx)
	if err != nil {
		_ = bdb.Close()
		return err
	}
	fail := func(err error) error {
		_ = conn.Close()
		_ = bdb.Close()
		return err
	}
	var locked []bool
	err = conn.NewRaw(`SELECT pg_try_advisory_lock(?, lock_key) FROM processes WHERE id = ?`, processClass, p.id).Scan(ctx, &locked)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fail(err)
	}
	if len(locked) == 0 {
		// The first registration, or one after the row of a process
		// thought dead for processRetention was deleted.
		err = conn.NewRaw(`INSERT INTO processes (id, host, pid, started_at, registered_at)
			VALUES (?, ?, ?, `+pgNowMicros+`, `+pgNowMicros+`) RETURNING pg_try_advisory_lock(?, lock_key)`,
			p.id, p.host, p.pid, processClass).Scan(ctx, &locked)
		if err != nil {
			return fail(err)
		}
	}
	if len(locked) != 1 || !locked[0] {
		return fail(errLockHeld)
	}
	if _, err := conn.NewRaw(`UPDATE processes SET suspected_at = NULL, registered_at = `+pgNowMicros+` WHERE id = ?`, p.id).Exec(ctx); err != nil {
		return fail(err)
	}
	p.lockDB, p.lockConn = bdb, &conn
	return nil
}

// lockPath is the SQLite lock file of a process.
func (db *DB) lockPath(id string) string { return db.sqlitePath + ".process-" + id + ".lock" }

func (p *Process) lockSQLite(ctx context.Context) error {
	path := p.db.lockPath(p.id)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("create the process lock file: %w", err)
	}
	if locked, err := tryLock(f); !locked {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("lock the process lock file: %w", cmp.Or(err, errLockHeld))
	}
	// The row comes after the lock: the others test the locks of
	// registered processes only.
	now := micros(p.db.now())
	if _, err := p.db.write.NewRaw(`INSERT INTO processes (id, host, pid, started_at, registered_at) VALUES (?, ?, ?, ?, ?)`,
		p.id, p.host, p.pid, now, now).Exec(ctx); err != nil {
		_ = os.Remove(path)
		_ = f.Close()
		return err
	}
	p.lockFile = f
	return nil
}

// unlock lets the lock go: the session's end on Postgres, the file's on
// SQLite.
func (p *Process) unlock() {
	if p.lockConn != nil {
		_ = p.lockConn.Close()
		_ = p.lockDB.Close()
		p.lockDB, p.lockConn = nil, nil
	}
	if p.lockFile != nil {
		_ = os.Remove(p.lockFile.Name())
		_ = p.lockFile.Close()
		p.lockFile = nil
	}
}

// observe looks at the other processes' locks, marks those found free
// and tells of new deaths; now and then it deletes the rows of processes
// dead for processRetention.
func (p *Process) observe(ctx context.Context) error {
	var died []string
	var err error
	if p.db.dialect == SQLite {
		died, err = p.observeSQLite(ctx)
	} else {
		died, err = p.observePostgres(ctx)
	}
	if err != nil {
		return err
	}
	if len(died) > 0 {
		p.log.Info("processes found dead: their work is taken over", "processes", died)
		p.tell(false)
	}
	p.mu.Lock()
	sweep := time.Since(p.lastSweep) >= processSweepInterval
	if sweep {
		p.lastSweep = time.Now()
	}
	p.mu.Unlock()
	if !sweep {
		return nil
	}
	if p.db.dialect == SQLite {
		_, err = p.db.write.NewRaw(`DELETE FROM processes WHERE suspected_at < ?`, micros(p.db.now().Add(-processRetention))).Exec(ctx)
	} else {
		_, err = p.db.write.NewRaw(`DELETE FROM processes WHERE suspected_at < `+pgNowMicros+` - ? AND id IN (`+p.db.deadProcesses+`)`,
			processRetention.Microseconds()).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("delete the rows of dead processes: %w", err)
	}
	return nil
}

// observePostgres stamps the first sighting of each free lock and clears
// the stamp of each lock held, then returns the processes newly found dead.
func (p *Process) observePostgres(ctx context.Context) ([]string, error) {
	_, err := p.db.write.NewRaw(`WITH held AS (`+pgHeldProcessLocks+`)
		UPDATE processes SET suspected_at = CASE WHEN lock_key IN (SELECT objid FROM held) THEN NULL ELSE `+pgNowMicros+` END
		WHERE id <> ? AND (lock_key IN (SELECT objid FROM held)) = (suspected_at IS NOT NULL)`, p.id).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("mark processes whose lock is free: %w", err)
	}
	var dead []string
	if err := p.db.write.NewRaw(`SELECT id FROM processes WHERE id <> ? AND id IN (`+p.db.deadProcesses+`)`, p.id).
		Scan(ctx, &dead); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("list dead processes: %w", err)
	}
	var died []string
	now := make(map[string]bool, len(dead))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range dead {
		now[id] = true
		if !p.dead[id] {
			died = append(died, id)
		}
	}
	p.dead = now
	return died, nil
}

// observeSQLite tests the lock file of each process not known dead and
// marks those whose lock it could take.
func (p *Process) observeSQLite(ctx context.Context) ([]string, error) {
	var ids []string
	if err := p.db.read.NewRaw(`SELECT id FROM processes WHERE id <> ? AND suspected_at IS NULL`, p.id).
		Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var died []string
	for _, id := range ids {
		dead, err := lockFree(p.db.lockPath(id))
		if err != nil {
			return died, err
		}
		if !dead {
			continue
		}
		if _, err := p.db.write.NewRaw(`UPDATE processes SET suspected_at = ? WHERE id = ? AND suspected_at IS NULL`,
			micros(p.db.now()), id).Exec(ctx); err != nil {
			return died, fmt.Errorf("mark process %s dead: %w", id, err)
		}
		died = append(died, id)
	}
	return died, nil
}

// lockFree reports whether no process holds the lock file at path (or it
// is gone), removing it then.
func lockFree(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open a process lock file: %w", err)
	}
	defer f.Close()
	locked, err := tryLock(f)
	if err != nil {
		return false, fmt.Errorf("test a process lock file: %w", err)
	}
	if locked {
		_ = os.Remove(path)
	}
	return locked, nil
}

// tryLock takes an exclusive flock on f if no other open file holds one:
// false, and no error, when another does. Closing f lets it go.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
