package store

import (
	"context"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// preparedHooks are the query hooks that also see the prepared reads, which
// run on database/sql statements and so bypass bun's own hooks.
type preparedHooks struct {
	mu    sync.RWMutex
	hooks []bun.QueryHook
}

// AddQueryHook makes h see every statement the store runs: bun's queries on
// both pools and the prepared reads. It may be called while the store is
// in use (a test adds one to a running app, whose health and revocation
// watchers query meanwhile): bun's own hook list is not guarded against
// that, so bun has one hook, hookDispatch, which reads the guarded list.
func (db *DB) AddQueryHook(h bun.QueryHook) {
	db.hooks.mu.Lock()
	db.hooks.hooks = append(db.hooks.hooks, h)
	db.hooks.mu.Unlock()
}

// observePrepared tells the hooks about a prepared read; the returned
// function reports its end.
func (r *Conn) observePrepared(ctx context.Context, query string, args []any) func(error) {
	if r.db == nil {
		return func(error) {}
	}
	r.db.hooks.mu.RLock()
	hooks := r.db.hooks.hooks
	r.db.hooks.mu.RUnlock()
	if len(hooks) == 0 {
		return func(error) {}
	}
	ev := &bun.QueryEvent{DB: r.scanner, Query: query, QueryArgs: args, StartTime: time.Now()}
	for _, h := range hooks {
		ctx = h.BeforeQuery(ctx, ev)
	}
	return func(err error) {
		ev.Err = err
		for i := len(hooks) - 1; i >= 0; i-- {
			hooks[i].AfterQuery(ctx, ev)
		}
	}
}

// hookDispatch is the one hook bun knows of: it runs the hooks added
// with AddQueryHook, as they were when the query began.
type hookDispatch struct{ hooks *preparedHooks }

type dispatchedKey struct{}

func (d hookDispatch) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	d.hooks.mu.RLock()
	hooks := d.hooks.hooks
	d.hooks.mu.RUnlock()
	if len(hooks) == 0 {
		return ctx
	}
	for _, h := range hooks {
		ctx = h.BeforeQuery(ctx, ev)
	}
	return context.WithValue(ctx, dispatchedKey{}, hooks)
}

func (d hookDispatch) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	hooks, _ := ctx.Value(dispatchedKey{}).([]bun.QueryHook)
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i].AfterQuery(ctx, ev)
	}
}
