package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"

	"github.com/uptrace/bun"
)

// stmtCache keeps prepared statements by SQL text. bun renders every query
// with its arguments inlined, so each call is new SQL that the database must
// parse again; on SQLite parsing costs more than running a small indexed
// lookup. The hot reads (credential lookup on every request, resource
// lookups by id) therefore run as statements prepared once, with $N
// placeholders that both drivers bind, and are scanned by bun.
type stmtCache struct {
	db    *sql.DB
	stmts sync.Map // query text → *sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache { return &stmtCache{db: db} }

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.stmts.LoadOrStore(query, s); loaded {
		_ = s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (c *stmtCache) close() {
	c.stmts.Range(func(_, s any) bool {
		_ = s.(*sql.Stmt).Close()
		return true
	})
}

// selectAll runs a read with $N placeholders and scans every row into dest,
// a pointer to a slice of models.
func (r *Conn) selectAll(ctx context.Context, dest any, query string, args ...any) error {
	rows, err := r.prepared(ctx, query, args...)
	if err != nil {
		return err
	}
	return r.scanner.ScanRows(ctx, rows, dest)
}

// selectOne runs a read with $N placeholders and scans its first row into
// dest, a model pointer; no row is sql.ErrNoRows.
func (r *Conn) selectOne(ctx context.Context, dest any, query string, args ...any) error {
	rows, err := r.prepared(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.scanner.ScanRow(ctx, rows, dest); err != nil {
		return err
	}
	return rows.Close()
}

// prepared runs query outside a transaction as a prepared statement on the
// read pool, and inside one on the transaction.
func (r *Conn) prepared(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	var (
		rows *sql.Rows
		err  error
	)
	done := r.observePrepared(ctx, query, args)
	defer func() { done(err) }()
	switch tx := r.read.(type) {
	case bun.Tx:
		rows, err = tx.Tx.QueryContext(ctx, query, args...)
	default:
		var stmt *sql.Stmt
		if stmt, err = r.stmts.get(ctx, query); err == nil {
			rows, err = stmt.QueryContext(ctx, args...)
		}
	}
	return rows, err
}

// byIDs is a read of the rows whose ids are in a set, the set its one
// parameter, as each dialect runs it (selectByIDs).
type byIDs struct{ postgres, sqlite string }

// newByIDs makes a read by ids of query, whose one parameter is the set,
// written "IN (?)". On Postgres the set is one JSON parameter of a
// prepared statement, so that the text, and the plan, are the same
// whatever the number of ids; a list written into the text was planned
// again at every batch, and a lone id cost more to plan than to read.
func newByIDs(query string) byIDs {
	if strings.Count(query, "?") != 1 || !strings.Contains(query, "IN (?)") {
		panic("newByIDs: the query's one parameter must be written IN (?): " + query)
	}
	return byIDs{
		postgres: strings.Replace(query, "IN (?)", "= ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))", 1),
		sqlite:   query,
	}
}

// selectByIDs runs q for ids and scans every row into dest, a pointer to
// a slice of models; ids without a row are left out.
func (r *Conn) selectByIDs(ctx context.Context, dest any, q byIDs, ids []string) error {
	var err error
	if r.dialect == Postgres {
		err = r.selectAll(ctx, dest, q.postgres, jsonList(ids))
	} else {
		err = r.read.NewRaw(q.sqlite, bun.List(ids)).Scan(ctx, dest)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
