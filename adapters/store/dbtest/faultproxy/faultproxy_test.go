package faultproxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
)

// postgresURL is the local test server; deliberately not $DATABASE_URL, so
// these tests never send traffic anywhere but 127.0.0.1.
const postgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// long is how long a test waits for something that should happen: generous,
// because the machine is small and shared.
const long = 15 * time.Second

type testBundle struct {
	proxy *faultproxy.Proxy
	db    *sql.DB
}

// setup starts a proxy in front of Postgres and a pool that connects through
// it, giving up on a silent server after readTimeout.
func setup(t *testing.T, readTimeout time.Duration) *testBundle {
	t.Helper()
	p := faultproxy.Start(t, "127.0.0.1:5432")
	db := sql.OpenDB(pgdriver.NewConnector(
		pgdriver.WithDSN(p.URL(postgresURL)),
		pgdriver.WithDialTimeout(2*time.Second),
		pgdriver.WithReadTimeout(readTimeout),
	))
	t.Cleanup(func() { _ = db.Close() })
	return &testBundle{proxy: p, db: db}
}

// conn returns one pooled connection, already used once, so a test knows
// which connection its next query travels on.
func (b *testBundle) conn(t *testing.T) *sql.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	c, err := b.db.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, 1, selectInt(ctx, c, "SELECT 1"))
	return c
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func selectInt(ctx context.Context, q querier, query string) int {
	n, _ := trySelectInt(ctx, q, query)
	return n
}

func trySelectInt(ctx context.Context, q querier, query string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, query).Scan(&n)
	return n, err
}

// inBackground runs query on c and reports its error when it ends.
func inBackground(c *sql.Conn, query string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*long)
		defer cancel()
		_, err := c.ExecContext(ctx, query)
		done <- err
	}()
	return done
}

// startEcho starts a TCP echo server on 127.0.0.1 and returns its address.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// echo writes msg and reads it back, failing the test if it does not come.
func echo(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(long)))
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

// readErr reads from c until it fails and returns what it read and the error.
func readErr(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(long)))
	var got bytes.Buffer
	_, err := io.Copy(&got, c)
	if err == nil {
		err = io.EOF // io.Copy hides the EOF
	}
	return got.Bytes(), err
}

func TestPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t, 5*time.Second)

	c := b.conn(t)
	require.Equal(t, 42, selectInt(context.Background(), c, "SELECT 42"))
	require.Equal(t, 1, b.proxy.Conns())
	require.True(t, strings.HasPrefix(b.proxy.Addr(), "127.0.0.1:"))
	require.Equal(t, "postgres://postgres@"+b.proxy.Addr()+"/test?sslmode=disable", b.proxy.URL(postgresURL))
}

func TestFreezeHoldsQueryUntilThaw(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long)
	c := b.conn(t)

	b.proxy.Freeze()
	done := make(chan int, 1)
	go func() { done <- selectInt(context.Background(), c, "SELECT 42") }()
	select {
	case n := <-done:
		t.Fatalf("query answered %d while frozen", n)
	case <-time.After(300 * time.Millisecond):
	}

	b.proxy.Thaw()
	select {
	case n := <-done:
		require.Equal(t, 42, n)
	case <-time.After(long):
		t.Fatal("query still hanging after Thaw")
	}
}

func TestFreezeHoldsNewConnectionsAndBytesInOrder(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, startEcho(t))

	p.Freeze()
	c := dial(t, p.Addr()) // accepted although frozen
	for _, part := range []string{"one ", "two ", "three"} {
		_, err := c.Write([]byte(part))
		require.NoError(t, err)
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err := c.Read(make([]byte, 1))
	require.True(t, isTimeout(err), "read while frozen: %v", err)

	p.Thaw()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(long)))
	got := make([]byte, len("one two three"))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, "one two three", string(got))
}

func TestCutFailsInFlightQueryAndNextConnectionWorks(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long)
	c := b.conn(t)

	done := inBackground(c, "SELECT pg_sleep(3)")
	time.Sleep(100 * time.Millisecond) // let the query leave; if not, it fails anyway
	b.proxy.Cut()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(long):
		t.Fatal("query still running after Cut")
	}
	waitConns(t, b.proxy, 0)

	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	n, err := trySelectInt(ctx, b.db, "SELECT 7")
	require.NoError(t, err)
	require.Equal(t, 7, n)
}

func TestCutSendsFIN(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	echo(t, c, "hello")

	p.Cut()
	_, err := readErr(t, c)
	require.ErrorIs(t, err, io.EOF)
	echo(t, dial(t, p.Addr()), "again")
}

func TestCutClosesFrozenConnections(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, startEcho(t))
	live := dial(t, p.Addr())
	echo(t, live, "live")

	p.Freeze()
	_, err := live.Write([]byte("held"))
	require.NoError(t, err)
	fresh := dial(t, p.Addr())
	waitConns(t, p, 2)
	p.Cut()
	for _, c := range []net.Conn{live, fresh} {
		got, err := readErr(t, c)
		require.Empty(t, got)
		require.False(t, isTimeout(err), "frozen connection not closed: %v", err)
	}
	waitConns(t, p, 0)
}

func TestResetFailsInFlightQueryAndNextConnectionWorks(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long)
	c := b.conn(t)

	done := inBackground(c, "SELECT pg_sleep(3)")
	time.Sleep(100 * time.Millisecond)
	b.proxy.Reset()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(long):
		t.Fatal("query still running after Reset")
	}

	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	n, err := trySelectInt(ctx, b.db, "SELECT 7")
	require.NoError(t, err)
	require.Equal(t, 7, n)
}

func TestResetSendsRST(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	echo(t, c, "hello")

	p.Reset()
	_, err := readErr(t, c)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	echo(t, dial(t, p.Addr()), "again")
}

func TestRefuseFailsConnectFast(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long) // a refusal must not wait for this timeout

	b.proxy.SetRefuse(true)
	start := time.Now()
	err := b.db.PingContext(context.Background())
	require.Error(t, err)
	require.Less(t, time.Since(start), long, "refused connect waited for the read timeout")

	b.proxy.SetRefuse(false)
	require.NoError(t, b.db.PingContext(context.Background()))
}

func TestBlackholeTimesOutConnect(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Second)

	b.proxy.SetBlackhole(true)
	start := time.Now()
	_, err := trySelectInt(context.Background(), b.db, "SELECT 1")
	require.True(t, isTimeout(err), "want a timeout, got %v", err)
	require.GreaterOrEqual(t, time.Since(start), time.Second)

	b.proxy.SetBlackhole(false)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	require.Equal(t, 1, selectInt(ctx, b.db, "SELECT 1"))
}

func TestHalfReplyThenResetFailsQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long)
	c := b.conn(t)

	b.proxy.HalfReplyThenReset()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	_, err := trySelectInt(ctx, c, "SELECT 1")
	require.Error(t, err)

	// One-shot: the pool's next connection is healthy.
	n, err := trySelectInt(ctx, b.db, "SELECT 7")
	require.NoError(t, err)
	require.Equal(t, 7, n)
}

func TestHalfReplyThenResetTearsChunk(t *testing.T) {
	t.Parallel()
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	echo(t, c, "warm")

	p.HalfReplyThenReset()
	_, err := c.Write([]byte("0123456789"))
	require.NoError(t, err)
	got, err := readErr(t, c)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	require.Equal(t, "01234", string(got))
}

func TestSetDelayDelaysReply(t *testing.T) {
	t.Parallel()
	b := setup(t, 2*long)
	c := b.conn(t)
	const delay = 500 * time.Millisecond

	b.proxy.SetDelay(delay)
	start := time.Now()
	require.Equal(t, 1, selectInt(context.Background(), c, "SELECT 1"))
	require.GreaterOrEqual(t, time.Since(start), delay)

	b.proxy.SetDelay(0)
	require.Equal(t, 2, selectInt(context.Background(), c, "SELECT 2"))
}

// TestCloseIsIdempotentAndLeavesNoGoroutines is not parallel: it counts
// goroutines in the proxy's code, and parallel tests are paused while it runs.
func TestCloseIsIdempotentAndLeavesNoGoroutines(t *testing.T) {
	before := proxyGoroutines()
	p := faultproxy.Start(t, startEcho(t))

	live := dial(t, p.Addr())
	echo(t, live, "live")
	p.Freeze()
	_, err := live.Write([]byte("held")) // read by the proxy, held at the gate
	require.NoError(t, err)
	dial(t, p.Addr()) // accepted while frozen, waiting to dial upstream
	waitConns(t, p, 2)
	p.SetBlackhole(true)
	dial(t, p.Addr())
	waitConns(t, p, 3)
	p.SetDelay(time.Hour)
	require.Greater(t, proxyGoroutines(), before)

	p.Close()
	p.Close()
	require.Equal(t, 0, p.Conns())
	require.Eventually(t, func() bool { return proxyGoroutines() == before }, long, 10*time.Millisecond)
	_, err = net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	require.Error(t, err, "still listening after Close")
}

func waitConns(t *testing.T, p *faultproxy.Proxy, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Conns() == n }, long, 5*time.Millisecond)
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// proxyGoroutines counts goroutines running the proxy's methods.
func proxyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "faultproxy.(*Proxy)") {
			count++
		}
	}
	return count
}
