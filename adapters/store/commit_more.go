package store

import (
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

// The batch operations of the features beside messaging, webhooks and
// email (commit.go, bound.go): each is a function that returns its SQLite
// statements on a bun.IDB and one that writes its Postgres statement on a
// binder, called from batchStatements and pgStatements in the order there.

// insertGroupChats links provider group chats to their group threads.
func insertGroupChats(db bun.IDB, chats []writes.GroupChat) []batchQuery {
	return insertRows(db, chats, groupChatToRow)
}

// insertGroupChatsBound is insertGroupChats on Postgres.
func insertGroupChatsBound(tables *schema.Tables, p *binder, chats []writes.GroupChat) string {
	return boundInsert(tables, p, mapRows(chats, groupChatToRow), "")
}

func groupChatToRow(c writes.GroupChat) channelChatRow {
	return channelChatRow{NumberID: c.NumberID, ChatID: c.ChatID, ThreadID: c.ThreadID, CreatedAt: c.At}
}

// insertCronJobs stores new cron jobs.
func insertCronJobs(db bun.IDB, jobs []cron.Job) []batchQuery {
	return insertRows(db, jobs, cronJobToRow)
}

// insertCronJobsBound is insertCronJobs on Postgres.
func insertCronJobsBound(tables *schema.Tables, p *binder, jobs []cron.Job) string {
	return boundInsert(tables, p, mapRows(jobs, cronJobToRow), "")
}
