package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// Lazily begun transactions (Postgres, shared batches).
//
// Many shared batches only write: every email send, and every message send
// whose checks were answered before its transaction, keeps its rows and
// job for the commit (rowbuffer.go, jobbuffer.go). Such a batch need not
// BEGIN at all: its statements go to Postgres as one multi-statement query,
// which Postgres runs as one implicit transaction, all or nothing. That is
// one round trip instead of four (BEGIN, the INSERTs, COMMIT) and a batch
// that holds a connection for one exchange. lazyTx is the bun.IDB such a
// batch's repositories use: it begins a real transaction at the first
// statement that must run before the commit (a read, a non-deferred
// write), after which the batch ends as any other.

// lazyTx is a transaction begun by its first statement.
type lazyTx struct {
	db *bun.DB
	// ctx begins the transaction: the batch's, not a caller's.
	ctx   context.Context
	tx    bun.Tx
	begun bool
	// err is the failure to begin, reported again by the commit.
	err error
}

var _ bun.IDB = (*lazyTx)(nil)

func newLazyTx(ctx context.Context, db *bun.DB) *lazyTx { return &lazyTx{db: db, ctx: ctx} }

// begin begins the transaction once.
func (l *lazyTx) begin() (bun.Tx, error) {
	if !l.begun && l.err == nil {
		l.tx, l.err = l.db.BeginTx(l.ctx, nil)
		l.begun = l.err == nil
	}
	return l.tx, l.err
}

// commit ends the batch: when nothing began the transaction, pending (the
// statements writing what the batch kept) runs as one multi-statement
// query; otherwise pending runs in the transaction, which then commits.
func (l *lazyTx) commit(ctx context.Context, pending []*pendingWrite) error {
	if l.err != nil {
		return l.err
	}
	if l.begun {
		if err := runWrites(ctx, pending); err != nil {
			_ = l.tx.Rollback()
			return err
		}
		return l.tx.Commit()
	}
	if len(pending) == 0 {
		return nil
	}
	buf := renderBuffers.Get().(*[]byte)
	q := (*buf)[:0]
	defer func() {
		if cap(q) <= maxKeptRenderBuffer {
			*buf = q[:0]
			renderBuffers.Put(buf)
		}
	}()
	for i, w := range pending {
		if i > 0 {
			q = append(q, ";\n"...)
		}
		var err error
		if q, err = w.query.AppendQuery(l.db.QueryGen(), q); err != nil {
			return w.wrap(err)
		}
	}
	// The queries are bound to l, whose Exec would begin the transaction:
	// the rendered text runs on the pool instead. bun is given no
	// arguments to substitute, so nothing in the rows is read as a
	// placeholder.
	if _, err := l.db.ExecContext(ctx, string(q)); err != nil {
		if len(pending) == 1 {
			return pending[0].wrap(err)
		}
		return fmt.Errorf("write %d statements in one query: %w", len(pending), err)
	}
	return nil
}

// renderBuffers keep the buffers write-only batches are rendered into: a
// batch's text runs to tens of kilobytes, and grown afresh each time it was
// a quarter of all the bytes an email send allocated. The text run is a
// copy, so a buffer is free again once its batch has run.
var renderBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxKeptRenderBuffer is the largest buffer kept for reuse; a rare huge
// batch (long message bodies) does not pin its buffer.
const maxKeptRenderBuffer = 1 << 20

// rollback ends a batch that failed.
func (l *lazyTx) rollback() {
	if l.begun {
		_ = l.tx.Rollback()
	}
}

// errNotBegun stands for a failed BEGIN in a *sql.Row, which cannot carry
// an error of its own; the batch reports the real one at its commit.
var errNotBegun = errors.New("the transaction could not begin")

// The statements below come from bun's query builders bound to l, already
// formatted and already seen by the query hooks: like bun's own Tx (see
// bun's setConn), they run on the database/sql transaction beneath, so
// the hooks do not see them twice.

func (l *lazyTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tx, err := l.begin()
	if err != nil {
		return nil, err
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

func (l *lazyTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	tx, err := l.begin()
	if err != nil {
		return nil, err
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

func (l *lazyTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	tx, err := l.begin()
	if err != nil {
		// A row from an ended context fails its Scan without a query.
		ended, cancel := context.WithCancelCause(ctx)
		cancel(errNotBegun)
		return l.db.DB.QueryRowContext(ended, query, args...)
	}
	return tx.Tx.QueryRowContext(ctx, query, args...)
}

// sqlTx is the transaction for prepared reads, begun if need be.
func (l *lazyTx) sqlTx() (*sql.Tx, error) {
	tx, err := l.begin()
	if err != nil {
		return nil, err
	}
	return tx.Tx, nil
}

func (l *lazyTx) Dialect() schema.Dialect { return l.db.Dialect() }

func (l *lazyTx) NewValues(model any) *bun.ValuesQuery {
	return bun.NewValuesQuery(l.db, model).Conn(l)
}
func (l *lazyTx) NewSelect() *bun.SelectQuery { return bun.NewSelectQuery(l.db).Conn(l) }
func (l *lazyTx) NewInsert() *bun.InsertQuery { return bun.NewInsertQuery(l.db).Conn(l) }
func (l *lazyTx) NewUpdate() *bun.UpdateQuery { return bun.NewUpdateQuery(l.db).Conn(l) }
func (l *lazyTx) NewDelete() *bun.DeleteQuery { return bun.NewDeleteQuery(l.db).Conn(l) }
func (l *lazyTx) NewMerge() *bun.MergeQuery   { return bun.NewMergeQuery(l.db).Conn(l) }
func (l *lazyTx) NewRaw(query string, args ...any) *bun.RawQuery {
	return bun.NewRawQuery(l.db, query, args...).Conn(l)
}
func (l *lazyTx) NewCreateTable() *bun.CreateTableQuery {
	return bun.NewCreateTableQuery(l.db).Conn(l)
}
func (l *lazyTx) NewDropTable() *bun.DropTableQuery { return bun.NewDropTableQuery(l.db).Conn(l) }
func (l *lazyTx) NewCreateIndex() *bun.CreateIndexQuery {
	return bun.NewCreateIndexQuery(l.db).Conn(l)
}
func (l *lazyTx) NewDropIndex() *bun.DropIndexQuery { return bun.NewDropIndexQuery(l.db).Conn(l) }
func (l *lazyTx) NewTruncateTable() *bun.TruncateTableQuery {
	return bun.NewTruncateTableQuery(l.db).Conn(l)
}
func (l *lazyTx) NewAddColumn() *bun.AddColumnQuery { return bun.NewAddColumnQuery(l.db).Conn(l) }
func (l *lazyTx) NewDropColumn() *bun.DropColumnQuery {
	return bun.NewDropColumnQuery(l.db).Conn(l)
}

// BeginTx begins a savepoint in the transaction, as bun.Tx does.
func (l *lazyTx) BeginTx(ctx context.Context, opts *sql.TxOptions) (bun.Tx, error) {
	tx, err := l.begin()
	if err != nil {
		return bun.Tx{}, err
	}
	return tx.BeginTx(ctx, opts)
}

// RunInTx runs f in a savepoint of the transaction, as bun.Tx does.
func (l *lazyTx) RunInTx(ctx context.Context, opts *sql.TxOptions, f func(ctx context.Context, tx bun.Tx) error) error {
	tx, err := l.begin()
	if err != nil {
		return err
	}
	return tx.RunInTx(ctx, opts, f)
}
