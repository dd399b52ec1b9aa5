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
// both pools and the prepared reads. Add hooks before the store is used
// (bun's own list is not guarded against concurrent queries).
func (db *DB) AddQueryHook(h bun.QueryHook) {
	db.write.AddQueryHook(h)
	if db.read != db.write {
		db.read.AddQueryHook(h)
	}
	db.hooks.mu.Lock()
	db.hooks.hooks = append(db.hooks.hooks, h)
	db.hooks.mu.Unlock()
}

// observePrepared tells the hooks about a prepared read; the returned
// function reports its end.
func (r *Repos) observePrepared(ctx context.Context, query string, args []any) func(error) {
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
