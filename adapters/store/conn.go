package store

import (
	"time"

	"github.com/uptrace/bun"
)

// Conn is what every feature store runs its statements on: the pools
// outside a transaction (reads go to the read pool, writes to the writer),
// or one transaction for both. The feature stores (AccountStore,
// MessagingStore, EmailStore, CronStore, WebhookStore, ChannelStore,
// JobQueue) each embed it and add the methods of their port; what
// several ports share (RecordResponse, WriteBatch) is Conn's own.
type Conn struct {
	read    bun.IDB
	write   bun.IDB
	dialect Dialect
	// stmts prepares the hot reads on the read pool; scanner maps their
	// rows to models.
	stmts   *stmtCache
	scanner *bun.DB
	db      *DB
	// tx is set on a transaction's repositories.
	tx *txState
}

func (r *Conn) clock() time.Time { return r.db.now() }

// jobsEnqueued wakes the runners: at once outside a transaction, after the
// commit inside one.
func (r *Conn) jobsEnqueued() {
	if r.tx != nil {
		r.tx.enqueued = true
		return
	}
	r.db.wake.signal()
}

// lockForUpdate is appended to a read inside a Postgres transaction that
// decides a change of the row (a group, a webhook endpoint): changes then
// run one after another instead of overwriting each other. (SQLite transactions hold the write lock already.)
func (r *Conn) lockForUpdate() string {
	if r.tx != nil && r.dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}
