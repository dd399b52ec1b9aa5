package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Guarded connections.
//
// database/sql keeps a connection for reuse unless its driver says it is
// bad. pgdriver v1.2.18 says so for some failures only: a read that timed
// out in a prepared statement, a row read, or a transaction's COMMIT
// leaves the connection in the pool with the reply still on its way, and
// the next query on it, another request's, reads that stale reply. Under a
// database stall that crossed two accounts' answers.
//
// guardedConn wraps every connection of both dialects and keeps one
// invariant: after an error that may leave the connection out of step
// with the server (anything but an error the server itself answered in
// order), the connection is closed at once and never handed out again.
// database/sql drops its prepared statements with it. The same wrapper
// turns the errors that mean the database is away into the domain's
// unavailable failure, so every caller answers 503 without knowing the
// driver.

// dbRetryAfter is what an unavailable database asks callers to wait.
const dbRetryAfter = 2 * time.Second

// errRules says what a driver's errors mean.
type errRules interface {
	// outOfStep reports whether err may leave the connection's protocol
	// state unknown, so that the connection must not be reused.
	outOfStep(err error) bool
	// unavailable reports whether err means the database cannot be
	// reached or cannot take the work now, so that retrying later may
	// succeed.
	unavailable(err error) bool
}

// innerConn is what both drivers' connections implement.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// guardedConnector opens guarded connections.
type guardedConnector struct {
	connect func(ctx context.Context) (driver.Conn, error)
	drv     driver.Driver
	rules   errRules
}

var _ driver.Connector = (*guardedConnector)(nil)

func (c *guardedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.connect(ctx)
	if err != nil {
		return nil, asUnavailable(err, c.rules, true)
	}
	inner, ok := cn.(innerConn)
	if !ok {
		_ = cn.Close()
		return nil, errors.New("store: the database driver lacks context-aware connections")
	}
	return &guardedConn{inner: inner, rules: c.rules}, nil
}

// Driver returns the wrapped driver, so that code reaching for it
// (pgdriver's Listener) finds what it expects.
func (c *guardedConnector) Driver() driver.Driver { return c.drv }

// guardedConn is one connection; see above.
type guardedConn struct {
	inner  innerConn
	rules  errRules
	broken atomic.Bool
}

var _ innerConn = (*guardedConn)(nil)

// check closes the connection when err leaves it out of step and turns
// an unavailable database into the domain failure. It returns
// driver.ErrSkip as it is, since database/sql compares it. (io.EOF is a
// closed socket here; only Next's io.EOF, the end of the rows, is not.)
func (g *guardedConn) check(err error) error {
	if err == nil || err == driver.ErrSkip {
		return err
	}
	bad := g.rules.outOfStep(err)
	if bad && g.broken.CompareAndSwap(false, true) {
		_ = g.inner.Close()
	}
	return asUnavailable(err, g.rules, bad)
}

// asUnavailable wraps err as the unavailable failure when it is one, keeping
// it for errors.Is and errors.As (driver.ErrBadConn, pgdriver.Error).
func asUnavailable(err error, rules errRules, outOfStep bool) error {
	if !outOfStep && !rules.unavailable(err) {
		return err
	}
	var fe *failure.Error
	if errors.As(err, &fe) {
		return err
	}
	e := failure.Unavailable("the database is unavailable; retry later", err)
	e.RetryAfter = dbRetryAfter
	return e
}

func (g *guardedConn) Prepare(query string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), query)
}

func (g *guardedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := g.inner.PrepareContext(ctx, query)
	if err != nil {
		return nil, g.check(err)
	}
	return &guardedStmt{conn: g, inner: s}, nil
}

func (g *guardedConn) Close() error { return g.inner.Close() }

func (g *guardedConn) Begin() (driver.Tx, error) {
	return g.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction whose COMMIT and ROLLBACK keep the deadline
// of ctx: database/sql runs them without a context, and pgdriver then
// waits its whole read timeout for an answer, past the request's deadline.
func (g *guardedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := g.inner.BeginTx(ctx, opts)
	if err != nil {
		return nil, g.check(err)
	}
	deadline, _ := ctx.Deadline()
	return &guardedTx{conn: g, inner: tx, deadline: deadline}, nil
}

func (g *guardedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := g.inner.ExecContext(ctx, query, args)
	return res, g.check(err)
}

func (g *guardedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := g.inner.QueryContext(ctx, query, args)
	if err != nil {
		return nil, g.check(err)
	}
	return &guardedRows{conn: g, inner: rows}, nil
}

func (g *guardedConn) Ping(ctx context.Context) error { return g.check(g.inner.Ping(ctx)) }

// ResetSession refuses a connection that broke, so database/sql takes
// another; it runs before every reuse.
func (g *guardedConn) ResetSession(ctx context.Context) error {
	if g.broken.Load() {
		return driver.ErrBadConn
	}
	return g.check(g.inner.ResetSession(ctx))
}

// IsValid keeps a broken connection out of the pool when it is returned.
func (g *guardedConn) IsValid() bool { return !g.broken.Load() && g.inner.IsValid() }

// guardedTx ends a transaction within the deadline of its BeginTx.
type guardedTx struct {
	conn     *guardedConn
	inner    driver.Tx
	deadline time.Time
}

func (t *guardedTx) Commit() error   { return t.end("COMMIT", t.inner.Commit) }
func (t *guardedTx) Rollback() error { return t.end("ROLLBACK", t.inner.Rollback) }

// end runs COMMIT or ROLLBACK. With a deadline, it runs the statement itself
// under that deadline: pgdriver's own Commit and Rollback are that same
// statement on the connection, without one. An error here leaves the
// outcome of a COMMIT unknown, which callers must treat as such.
func (t *guardedTx) end(statement string, plain func() error) error {
	if t.deadline.IsZero() {
		return t.conn.check(plain())
	}
	ctx, cancel := context.WithDeadline(context.Background(), t.deadline)
	defer cancel()
	_, err := t.conn.inner.ExecContext(ctx, statement, nil)
	return t.conn.check(err)
}

// guardedStmt is a prepared statement of a guarded connection.
type guardedStmt struct {
	conn  *guardedConn
	inner driver.Stmt
}

var (
	_ driver.StmtExecContext  = (*guardedStmt)(nil)
	_ driver.StmtQueryContext = (*guardedStmt)(nil)
)

// Close closes the statement on the server; a broken connection's
// statements went with its session.
func (s *guardedStmt) Close() error {
	if s.conn.broken.Load() {
		return nil
	}
	return s.conn.check(s.inner.Close())
}

func (s *guardedStmt) NumInput() int { return s.inner.NumInput() }

func (s *guardedStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("store: statements run with a context only")
}

func (s *guardedStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("store: statements run with a context only")
}

func (s *guardedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("store: the database driver lacks context-aware statements")
	}
	res, err := e.ExecContext(ctx, args)
	return res, s.conn.check(err)
}

func (s *guardedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("store: the database driver lacks context-aware statements")
	}
	rows, err := q.QueryContext(ctx, args)
	if err != nil {
		return nil, s.conn.check(err)
	}
	return &guardedRows{conn: s.conn, inner: rows}, nil
}

// guardedRows reads a result. It answers the optional column-type questions
// as the wrapped rows do, or as database/sql answers them when the driver
// does not (bun's map scans ask them on SQLite).
type guardedRows struct {
	conn  *guardedConn
	inner driver.Rows
}

var (
	_ driver.RowsColumnTypeDatabaseTypeName = (*guardedRows)(nil)
	_ driver.RowsColumnTypeLength           = (*guardedRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*guardedRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*guardedRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*guardedRows)(nil)
)

func (r *guardedRows) Columns() []string { return r.inner.Columns() }

// Close reads the rest of the result, unless the connection broke: there
// is nothing left to read in step.
func (r *guardedRows) Close() error {
	if r.conn.broken.Load() {
		return nil
	}
	return r.conn.check(r.inner.Close())
}

func (r *guardedRows) Next(dest []driver.Value) error {
	err := r.inner.Next(dest)
	if err == io.EOF {
		return err // the end of the rows
	}
	return r.conn.check(err)
}

func (r *guardedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.inner.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *guardedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.inner.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *guardedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.inner.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *guardedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.inner.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *guardedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.inner.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// pgdriverLog sends pgdriver's messages to slog at debug level. It writes
// one for every write to a connection the server had already closed, which
// database/sql then retries on another: an outage's first request per
// pooled connection. The outage itself is logged once, by the health
// watcher.
type pgdriverLog struct{}

func (pgdriverLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, fmt.Sprintf(format, v...))
}

func init() { pgdriver.Logger = pgdriverLog{} }

// postgresRules: pgdriver reads a server error to the end of its reply, so
// after one the connection is in step, unless the server ended the session
// (FATAL, PANIC). Anything else (a timeout, a reset, a reply it did not
// expect, a row of the wrong width) may leave bytes of a reply unread.
type postgresRules struct{}

func (postgresRules) outOfStep(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return isFatal(pgErr)
	}
	return true
}

func (postgresRules) unavailable(err error) bool {
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) {
		return isConnectionError(err)
	}
	if isFatal(pgErr) {
		return true
	}
	code := pgErr.Field('C')
	switch {
	case len(code) < 2:
		return false
	case code[:2] == "08", // connection exception
		code[:2] == "53", // insufficient resources (too many connections, out of memory)
		code == "57014",  // statement timeout
		code == "57P01",  // admin shutdown
		code == "57P02",  // crash shutdown
		code == "57P03",  // cannot connect now (starting up)
		code == "55P03":  // lock not available
		return true
	}
	return false
}

func isFatal(e pgdriver.Error) bool {
	s := e.Field('V')
	if s == "" {
		s = e.Field('S')
	}
	return s == "FATAL" || s == "PANIC"
}

// isConnectionError reports the failures of reaching a server: a timeout,
// a refused or reset connection, a closed one, a bad connection.
func isConnectionError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// sqliteRules: SQLite runs in the process, so a connection never falls
// out of step; a database locked by another process past busy_timeout is
// unavailable for now.
type sqliteRules struct{}

func (sqliteRules) outOfStep(error) bool { return false }

func (sqliteRules) unavailable(err error) bool {
	var liteErr *sqlite.Error
	if !errors.As(err, &liteErr) {
		return false
	}
	switch liteErr.Code() & 0xff {
	case sqliteBusy, sqliteLocked:
		return true
	}
	return false
}

// SQLite primary result codes (sqlite3.h).
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)
