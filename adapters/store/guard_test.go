package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// openPool opens a Postgres store whose pool holds one connection, so that
// the query after a fault runs on the faulted connection unless it was
// thrown away.
func openPool(t *testing.T, opts store.Options) *sql.DB {
	t.Helper()
	opts.MaxConns = 1
	db, err := store.Open(context.Background(), dbtest.URL(t, store.Postgres), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db.Bun().DB
}

func backendPID(t *testing.T, pool *sql.DB) int {
	t.Helper()
	var pid int
	require.NoError(t, pool.QueryRowContext(context.Background(), "SELECT pg_backend_pid()").Scan(&pid))
	return pid
}

// A read that times out leaves the reply on its way. The next query, on the
// same pool, must read its own answer: before the guard, a prepared
// statement's timed-out connection went back to the pool and the next
// query read the stale reply (another request's rows).
func TestTimedOutConnectionIsNeverReused(t *testing.T) {
	t.Parallel()
	pool := openPool(t, store.Options{})
	before := backendPID(t, pool)
	ctx := context.Background()

	// The sleep is long and the deadline generous, so that on a busy
	// machine the deadline still falls while the reply is on its way, not
	// before the query is sent.
	slow, err := pool.PrepareContext(ctx, "SELECT pg_sleep(2)::text AS slept, $1::int AS n")
	require.NoError(t, err)
	echo, err := pool.PrepareContext(ctx, "SELECT $1::int AS n")
	require.NoError(t, err)

	// A deadline that passed before the query was sent (the machine too
	// busy to send it in 400 ms) proves nothing: database/sql answers it
	// without touching the connection. Such a try is made again.
	timedOutReads := 0
	for i := 0; timedOutReads < 3; i++ {
		require.Less(t, i, 20, "no read timed out in flight in 20 tries")
		short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
		rows, err := slow.QueryContext(short, 1000+i)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			_ = rows.Close()
		}
		cancel()
		require.Error(t, err, "the read must time out")
		if !failure.Is(err, failure.KindUnavailable) && errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		require.True(t, failure.Is(err, failure.KindUnavailable), "a timed-out read is the unavailable failure, got %v", err)
		timedOutReads++

		var n int
		require.NoError(t, echo.QueryRowContext(ctx, i).Scan(&n))
		require.Equal(t, i, n, "the next query read another query's reply")
	}
	require.NotEqual(t, before, backendPID(t, pool), "the timed-out connection was reused")
}

// An error the server answered in order leaves the connection in step, so
// it stays in the pool (closing it would cost every failed insert a new
// connection).
func TestServerErrorKeepsTheConnection(t *testing.T) {
	t.Parallel()
	pool := openPool(t, store.Options{})
	before := backendPID(t, pool)
	_, err := pool.ExecContext(context.Background(), "SELECT * FROM no_such_table")
	require.Error(t, err)
	require.False(t, failure.Is(err, failure.KindUnavailable), "a missing table is not an outage: %v", err)
	require.Equal(t, before, backendPID(t, pool))
}

// Postgres gives up first: statement_timeout sits below the read timeout,
// and its error is the unavailable failure.
func TestStatementTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	pool := openPool(t, store.Options{StatementTimeout: 100 * time.Millisecond, ReadTimeout: 5 * time.Second})
	start := time.Now()
	_, err := pool.ExecContext(context.Background(), "SELECT pg_sleep(3)")
	require.Error(t, err)
	require.Less(t, time.Since(start), 3*time.Second, "the statement ran to its end: no statement_timeout")
	require.True(t, failure.Is(err, failure.KindUnavailable), "got %v", err)
	require.Equal(t, 2*time.Second, failure.As(err).RetryAfter)

	var n int
	require.NoError(t, pool.QueryRowContext(context.Background(), "SELECT 41 + 1").Scan(&n))
	require.Equal(t, 42, n)
}

func TestStatementTimeoutMustBeBelowReadTimeout(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), dbtest.PostgresURL(), store.Options{StatementTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
	require.ErrorContains(t, err, "must be shorter than the read timeout")
}

// A database file locked by another process past busy_timeout is
// unavailable for now, not an internal error.
func TestSQLiteLockedIsUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	db, err := store.Open(context.Background(), "sqlite:"+path, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	// Another process's writer: a connection of its own holding the write
	// lock. Ours waits busy_timeout for it; a short deadline ends that.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.Conn(context.Background())
	require.NoError(t, err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.ExecContext(context.Background(), "ROLLBACK"); _ = conn.Close() })

	// Our connection asks for the lock with no wait at all.
	_, err = db.Bun().ExecContext(context.Background(), "PRAGMA busy_timeout = 0")
	require.NoError(t, err)
	_, err = db.Bun().ExecContext(context.Background(), "CREATE TABLE t (x INTEGER)")
	require.Error(t, err)
	require.True(t, failure.Is(err, failure.KindUnavailable), "got %v", err)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}

// A pool held by slow queries makes a request wait for a connection only
// until its deadline, and the wait's end is the unavailable failure (503),
// not an internal error.
func TestExhaustedPoolWaitEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), dbtest.URL(t, store.Postgres), store.Options{MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	slow := make(chan error, 1)
	go func() {
		_, err := db.Bun().ExecContext(context.Background(), "SELECT pg_sleep(1.5)")
		slow <- err
	}()
	require.Eventually(t, func() bool { return db.Bun().DB.Stats().InUse == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = db.AccountStore().Account(ctx, "acc_nobody")
	require.Error(t, err)
	fe := failure.As(err)
	require.Equal(t, failure.KindUnavailable, fe.Kind, "got %v", err)
	require.Positive(t, fe.RetryAfter)
	require.NoError(t, <-slow, "the slow query itself is untouched")
}

// A connection attempt that fails after its dial (the database stalled in
// the handshake) closes what it dialled: otherwise each such socket, once
// the database answered again, kept a backend of its own until the
// garbage collector found it, and a stall left dozens of them behind.
func TestFailedConnectsLeaveNoSocketBehind(t *testing.T) {
	t.Parallel()
	db, proxy, _ := openBehindProxy(t, store.Options{MaxConns: 4})
	require.Eventually(t, func() bool { return db.Ready(context.Background()) == nil }, 10*time.Second, 50*time.Millisecond)
	before := proxy.Conns()

	proxy.Freeze()
	proxy.Cut() // the pool's connections go; new ones hang in the handshake
	const attempts = 6
	for range attempts {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		require.Error(t, db.Bun().PingContext(ctx))
		cancel()
	}
	proxy.Thaw()
	require.Eventually(t, func() bool { return db.Bun().PingContext(context.Background()) == nil }, 10*time.Second, 50*time.Millisecond)
	// The thawed handshakes run to their end; what their clients closed is
	// closed by the proxy in turn, and the pool keeps what it uses.
	require.Eventually(t, func() bool { return proxy.Conns() <= before+1 }, 5*time.Second, 20*time.Millisecond,
		"%d links open, %d before the stall: failed connects left their sockets open", proxy.Conns(), before)
}

// openBehindProxy opens a fresh Postgres database through a fault proxy;
// direct is its URL without the proxy.
func openBehindProxy(t *testing.T, opts store.Options) (db *store.DB, proxy *faultproxy.Proxy, direct string) {
	t.Helper()
	direct = dbtest.URL(t, store.Postgres)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	proxy = faultproxy.Start(t, u.Host)
	db, err = store.Open(context.Background(), proxy.URL(direct), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, proxy, direct
}
