package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
)

// Poll leases.
//
// On Postgres a lease is a session-level advisory lock, keyed by the
// number, held on one session of this DB's own (pollSession), which
// holds every lease this process has. The database frees the locks the
// moment that session ends: the holder died (its socket closed), or
// stopped answering for PollLeaseStall (Postgres's idle_session_timeout
// ends a session that sends nothing, and the session pings every
// pollPing while it lives). No clock is compared. The offset is read and
// written on that same session, so a holder whose session ended cannot
// move it: its lease is lost before anything of it is written.
//
// On SQLite a lease is an flock on a file beside the database
// (PATH.poll-NUMBER.lock), which the kernel frees when its holder dies;
// a second process on the same file waits its turn, as for migrations.

// The rhythm of the Postgres session.
const (
	// PollLeaseStall is how long a holder may send nothing before the
	// database ends its session and frees its leases.
	PollLeaseStall = 5 * time.Second
	// pollPing is how often the session says it lives.
	pollPing = time.Second
	// pollOpTimeout bounds each statement on the session.
	pollOpTimeout = 4 * time.Second
)

// PollLeases is the store of poll leases and offsets (channels.PollLeases).
type PollLeases struct{ db *DB }

var _ channels.PollLeases = PollLeases{}

// PollLeases is db's PollLeases.
func (db *DB) PollLeases() PollLeases { return PollLeases{db} }

// TakePollLease takes the lease on polling the number for this process.
func (p PollLeases) TakePollLease(ctx context.Context, numberID string) (channels.PollLease, error) {
	if p.db.dialect == SQLite {
		return p.db.takeFileLease(numberID)
	}
	return p.db.polls.take(ctx, p.db, numberID)
}

// pollLockKey is the advisory lock key text of a number's lease.
func pollLockKey(numberID string) string { return "switchboard.poll:" + numberID }

const (
	selectPollOffset  = "SELECT update_offset FROM poll_offsets WHERE number_id = ?"
	advancePollOffset = `INSERT INTO poll_offsets (number_id, update_offset) VALUES (?, ?)
		ON CONFLICT (number_id) DO UPDATE SET update_offset = excluded.update_offset
		WHERE poll_offsets.update_offset < excluded.update_offset`
)

// pollSession is the Postgres session that holds a DB's poll leases.
// Its zero value has no session; one opens with the first lease taken
// and lives until the DB closes or the session fails. mu orders every
// statement on it.
type pollSession struct {
	mu     sync.Mutex
	pool   *sql.DB
	conn   *sql.Conn
	leases map[string]*pgPollLease
}

// take takes numberID's advisory lock on the session, opening it first
// when there is none.
func (s *pollSession) take(ctx context.Context, db *DB, numberID string) (*pgPollLease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.leases[numberID]; held {
		return nil, channels.ErrPollLeaseHeld
	}
	if s.conn == nil {
		if err := s.open(ctx, db); err != nil {
			return nil, err
		}
	}
	var locked bool
	err := s.run(ctx, func(ctx context.Context, c *sql.Conn) error {
		return c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", pollLockKey(numberID)).Scan(&locked)
	})
	if err != nil {
		return nil, translate(err, "poll lease")
	}
	if !locked {
		return nil, channels.ErrPollLeaseHeld
	}
	l := &pgPollLease{s: s, numberID: numberID, done: make(chan struct{})}
	s.leases[numberID] = l
	return l, nil
}

// open starts the session and its pinger; the caller holds mu.
func (s *pollSession) open(ctx context.Context, db *DB) error {
	pool := sql.OpenDB(db.connector)
	pool.SetMaxOpenConns(1)
	conn, err := pool.Conn(ctx)
	if err != nil {
		_ = pool.Close()
		return translate(err, "poll lease")
	}
	// Postgres 14 and later end the session of a holder that stalls;
	// an older server refuses the setting, and a stalled holder then
	// keeps its leases until it dies or its connection breaks.
	setCtx, cancel := context.WithTimeout(ctx, pollOpTimeout)
	_, err = conn.ExecContext(setCtx, fmt.Sprintf("SET idle_session_timeout = %d", PollLeaseStall.Milliseconds()))
	cancel()
	if err != nil && (postgresRules{}).outOfStep(err) {
		_ = conn.Close()
		_ = pool.Close()
		return translate(err, "poll lease")
	}
	s.pool, s.conn, s.leases = pool, conn, map[string]*pgPollLease{}
	db.listeners.Add(1)
	go func() {
		defer db.listeners.Done()
		s.ping(db.background, conn)
	}()
	return nil
}

// ping says the session conn lives every pollPing, until it ends or
// ctx does (the DB closes, which ends the session).
func (s *pollSession) ping(ctx context.Context, conn *sql.Conn) {
	t := time.NewTicker(pollPing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			if s.conn == conn {
				s.end()
			}
			s.mu.Unlock()
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.conn != conn {
			s.mu.Unlock()
			return
		}
		_ = s.run(ctx, func(ctx context.Context, c *sql.Conn) error {
			_, err := c.ExecContext(ctx, "SELECT 1")
			return err
		})
		s.mu.Unlock()
	}
}

// run runs fn on the session, bounded by pollOpTimeout but not ended by
// ctx's cancellation: a statement cut off mid-way closes the connection,
// and with it every lease of the session. An error that leaves the
// session in doubt ends it (see end); an error the server answered in
// order leaves it as it is. The caller holds mu.
func (s *pollSession) run(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pollOpTimeout)
	defer cancel()
	err := fn(ctx, s.conn)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && (postgresRules{}).outOfStep(err) {
		s.end()
	}
	return err
}

// end closes the session, which frees its locks, and marks its leases
// lost; the caller holds mu.
func (s *pollSession) end() {
	_ = s.conn.Close()
	_ = s.pool.Close()
	for _, l := range s.leases {
		close(l.done)
	}
	s.pool, s.conn, s.leases = nil, nil, nil
}

// pgPollLease is one advisory lock of a pollSession.
type pgPollLease struct {
	s        *pollSession
	numberID string
	done     chan struct{}
}

var _ channels.PollLease = (*pgPollLease)(nil)

// on runs fn on the session while l is held, else returns
// channels.ErrPollLeaseLost; a failure that ends the session loses l too.
func (l *pgPollLease) on(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.leases[l.numberID] != l {
		return channels.ErrPollLeaseLost
	}
	err := l.s.run(ctx, fn)
	if err != nil && l.s.leases[l.numberID] != l {
		return fmt.Errorf("%w: %w", channels.ErrPollLeaseLost, err)
	}
	return translate(err, "poll offset")
}

func (l *pgPollLease) Offset(ctx context.Context) (int64, error) {
	var offset int64
	err := l.on(ctx, func(ctx context.Context, c *sql.Conn) error {
		err := c.QueryRowContext(ctx, "SELECT update_offset FROM poll_offsets WHERE number_id = $1", l.numberID).Scan(&offset)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return offset, err
}

func (l *pgPollLease) Advance(ctx context.Context, offset int64) error {
	return l.on(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO poll_offsets (number_id, update_offset) VALUES ($1, $2)
			ON CONFLICT (number_id) DO UPDATE SET update_offset = excluded.update_offset
			WHERE poll_offsets.update_offset < excluded.update_offset`, l.numberID, offset)
		return err
	})
}

func (l *pgPollLease) Check(ctx context.Context) error {
	return l.on(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "SELECT 1")
		return err
	})
}

func (l *pgPollLease) Done() <-chan struct{} { return l.done }

func (l *pgPollLease) Release(ctx context.Context) error {
	err := l.on(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", pollLockKey(l.numberID))
		return err
	})
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.leases[l.numberID] == l {
		delete(l.s.leases, l.numberID)
		close(l.done)
	}
	if errors.Is(err, channels.ErrPollLeaseLost) {
		return nil
	}
	return err
}

// safeLockName is a number id as it may stand in a file name.
var safeLockName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// takeFileLease takes the flock of the number's lease file.
func (db *DB) takeFileLease(numberID string) (*filePollLease, error) {
	name := numberID
	if !safeLockName.MatchString(name) {
		sum := sha256.Sum256([]byte(numberID))
		name = hex.EncodeToString(sum[:8])
	}
	f, err := os.OpenFile(db.sqlitePath+".poll-"+name+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the poll lease: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, channels.ErrPollLeaseHeld
		}
		return nil, fmt.Errorf("take the poll lease: %w", err)
	}
	return &filePollLease{db: db, numberID: numberID, f: f, done: make(chan struct{})}, nil
}

// filePollLease is an flock on a lease file; it is lost only with its
// process, or released.
type filePollLease struct {
	db       *DB
	numberID string
	mu       sync.Mutex
	f        *os.File
	done     chan struct{}
}

var _ channels.PollLease = (*filePollLease)(nil)

// held returns channels.ErrPollLeaseLost once l is released.
func (l *filePollLease) held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return channels.ErrPollLeaseLost
	}
	return nil
}

func (l *filePollLease) Offset(ctx context.Context) (int64, error) {
	if err := l.held(); err != nil {
		return 0, err
	}
	var offset []int64
	if err := l.db.write.NewRaw(selectPollOffset, l.numberID).Scan(ctx, &offset); err != nil {
		return 0, translate(err, "poll offset")
	}
	if len(offset) == 0 {
		return 0, nil
	}
	return offset[0], nil
}

func (l *filePollLease) Advance(ctx context.Context, offset int64) error {
	if err := l.held(); err != nil {
		return err
	}
	_, err := l.db.write.NewRaw(advancePollOffset, l.numberID, offset).Exec(ctx)
	return translate(err, "poll offset")
}

func (l *filePollLease) Check(context.Context) error { return l.held() }

func (l *filePollLease) Done() <-chan struct{} { return l.done }

func (l *filePollLease) Release(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the file frees its flock
	l.f = nil
	close(l.done)
	return err
}
