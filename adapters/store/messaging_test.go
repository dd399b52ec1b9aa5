package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// openWithAccount opens a fresh database with the account acc_rows.
func openWithAccount(t *testing.T, dialect store.Dialect) *store.DB {
	t.Helper()
	db := dbtest.Open(t, dialect)
	now := time.Now().UTC()
	require.NoError(t, db.AccountStore().InsertAccount(context.Background(), account.Account{ID: "acc_rows", Name: "rows", Version: 1, CreatedAt: now, UpdatedAt: now}))
	return db
}

func TestMessagesToDeliver(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		db := openWithAccount(t, dialect)
		r := db.MessagingStore()
		now := time.Now().UTC().Truncate(time.Microsecond)
		n := account.Number{ID: "num_dlv", AccountID: "acc_rows", Number: "+15550003333", Service: account.Telegram, Provider: account.ProviderSandbox, SealedSettings: []byte{9}, Enabled: true, CreatedAt: now}
		require.NoError(t, db.AccountStore().InsertNumber(ctx, n))
		individual := messaging.Thread{ID: "thr_dlv1", AccountID: "acc_rows", Service: account.Telegram, Type: messaging.Individual, AgentNumber: n.Number, Contact: "+15550004444", CreatedAt: now, UpdatedAt: now}
		group := messaging.Thread{ID: "thr_dlv2", AccountID: "acc_rows", Service: account.Telegram, Type: messaging.Group, AgentNumber: n.Number, Name: "team", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, r.InsertThread(ctx, individual, nil))
		members := []messaging.Participant{
			{Address: "+15550009999", Name: `Zoë "Z" O'Neil`, Admin: true},
			{Address: n.Number, IsAgent: true},
			{Address: "+15550001234", Name: "Al"},
		}
		require.NoError(t, r.InsertThread(ctx, group, members))
		msg := func(id, thread, from string) messaging.Message {
			return messaging.Message{ID: id, AccountID: "acc_rows", ThreadID: thread, Service: account.Telegram, Direction: messaging.OutboundAPI,
				From: from, To: "+15550004444", Content: messaging.Content{Kind: messaging.KindText, Text: id}, Status: messaging.Queued, CreatedAt: now, UpdatedAt: now}
		}
		for _, m := range []messaging.Message{msg("msg_d1", individual.ID, n.Number), msg("msg_d2", group.ID, n.Number), msg("msg_d3", individual.ID, "+15559999999")} {
			require.NoError(t, db.Commit(ctx, writes.Batch{Messages: []messaging.Message{m}}))
		}

		got, err := r.MessagesToDeliver(ctx, []string{"msg_d3", "msg_missing", "msg_d1", "msg_d2"})
		require.NoError(t, err)
		byID := map[string]int{}
		for i, d := range got {
			byID[d.Message.ID] = i
		}
		require.Len(t, got, 3, "the missing id is left out")
		d1, d2, d3 := got[byID["msg_d1"]], got[byID["msg_d2"]], got[byID["msg_d3"]]
		require.Equal(t, msg("msg_d1", individual.ID, n.Number), d1.Message)
		require.Equal(t, messaging.Individual, d1.ThreadType)
		require.True(t, d1.NumberFound)
		require.Equal(t, n, d1.Number, "the sending number, settings included")
		require.Equal(t, messaging.Group, d2.ThreadType)
		require.False(t, d3.NumberFound, "no number has that address")

		none, err := r.MessagesToDeliver(ctx, []string{"msg_missing"})
		require.NoError(t, err)
		require.Empty(t, none)

		// The read paths: a message with its thread and participants in
		// one query, and a thread's recent messages, both only for the
		// owning account.
		d, err := r.MessageDetails(ctx, "acc_rows", "msg_d2")
		require.NoError(t, err)
		require.Equal(t, msg("msg_d2", group.ID, n.Number), d.Message)
		require.Equal(t, group, d.Thread)
		parts, err := r.Participants(ctx, group.ID)
		require.NoError(t, err)
		require.Len(t, parts, 3)
		require.Equal(t, parts, d.Participants, "the same participants, in the same order, as Participants reads")
		require.True(t, d.Participants[0].IsAgent, "the agent first")
		require.Equal(t, `Zoë "Z" O'Neil`, d.Participants[2].Name)
		require.True(t, d.Participants[2].Admin)
		d, err = r.MessageDetails(ctx, "acc_rows", "msg_d1")
		require.NoError(t, err)
		require.Equal(t, individual, d.Thread)
		require.Empty(t, d.Participants, "a thread without participants")
		_, err = r.MessageDetails(ctx, "acc_other", "msg_d2")
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's message: %v", err)
		recent, err := r.RecentMessages(ctx, "acc_rows", individual.ID, 5)
		require.NoError(t, err)
		require.Len(t, recent, 2)
		recent, err = r.RecentMessages(ctx, "acc_other", individual.ID, 5)
		require.NoError(t, err)
		require.Empty(t, recent, "another account's thread has no messages for it")
	})
}

// A thread's recent messages are read by a prepared statement that Postgres
// plans once: with the limit bound as a parameter, it planned the statement
// again at every execution (its generic plan, blind to the limit, looked
// costlier), most of a get-recent's database CPU.
func TestRecentMessagesIsPlannedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One connection, so that this session's prepared statements are the
	// pool's.
	db, err := store.Open(ctx, dbtest.URL(t, store.Postgres), store.Options{MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	r := db.MessagingStore()
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, db.AccountStore().InsertAccount(ctx, account.Account{ID: "acc_plan", Name: "plan", Version: 1, CreatedAt: now, UpdatedAt: now}))
	thread := messaging.Thread{ID: "thr_plan", AccountID: "acc_plan", Service: account.Telegram, Type: messaging.Individual, AgentNumber: "+15550003333", Contact: "+15550004444", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, r.InsertThread(ctx, thread, nil))
	for i := range 8 {
		require.NoError(t, db.Commit(ctx, writes.Batch{Messages: []messaging.Message{{ID: fmt.Sprintf("msg_plan%d", i), AccountID: "acc_plan", ThreadID: thread.ID, Service: account.Telegram,
			Direction: messaging.Inbound, From: thread.Contact, To: thread.AgentNumber, Content: messaging.Content{Kind: messaging.KindText, Text: "hi"},
			Status: messaging.Received, CreatedAt: now.Add(time.Duration(i) * time.Second), UpdatedAt: now}}}))
	}
	// A long history, older than those eight, as the planner sees it.
	_, err = db.Bun().ExecContext(ctx, `INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, kind, status, created_at, updated_at)
		SELECT 'msg_old' || i, 'acc_plan', 'thr_plan', 'telegram', 'inbound', '+15550004444', 'text', 'received', ?0::timestamptz - i * interval '1 second', ?0
		FROM generate_series(1, 5000) AS i`, now)
	require.NoError(t, err)
	_, err = db.Bun().ExecContext(ctx, "ANALYZE messages")
	require.NoError(t, err)
	for range 10 {
		got, err := r.RecentMessages(ctx, "acc_plan", thread.ID, 5)
		require.NoError(t, err)
		require.Len(t, got, 5)
		require.Equal(t, "msg_plan7", got[0].ID, "newest first")
	}
	var generic, custom int
	require.NoError(t, db.Bun().QueryRowContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%FROM messages WHERE thread_id = $1%'`).Scan(&generic, &custom))
	require.Positive(t, generic, "executions on the generic plan (custom plans: %d)", custom)
}

// capturedQueries records the text of the statements a store runs that
// contain a marker, as the database received them.
type capturedQueries struct {
	marker string
	mu     sync.Mutex
	seen   []string
}

func (c *capturedQueries) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *capturedQueries) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if strings.Contains(ev.Query, c.marker) {
		c.mu.Lock()
		c.seen = append(c.seen, ev.Query)
		c.mu.Unlock()
	}
}

func (c *capturedQueries) last(t *testing.T) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.seen, "no statement with %q ran", c.marker)
	return c.seen[len(c.seen)-1]
}

// A page deep in a thread's history is a range of the
// messages_thread_recent index that starts at the cursor: the database
// reads the page's rows, not the newer ones before them, so a page costs
// the same at any depth (an OFFSET, or a keyset condition the planner
// keeps as a filter, reads every newer message first).
func TestThreadMessagesPageIsAnIndexRange(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		db := openWithAccount(t, dialect)
		r := db.MessagingStore()
		now := time.Now().UTC().Truncate(time.Microsecond)
		thread := messaging.Thread{ID: "thr_deep", AccountID: "acc_rows", Service: account.Telegram, Type: messaging.Individual,
			AgentNumber: "+15550003333", Contact: "+15550004444", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, r.InsertThread(ctx, thread, nil))
		const total, batch = 2000, 500
		for start := 0; start < total; start += batch {
			ms := make([]messaging.Message, batch)
			for i := range ms {
				n := start + i
				ms[i] = messaging.Message{ID: fmt.Sprintf("msg_deep%05d", n), AccountID: "acc_rows", ThreadID: thread.ID, Service: account.Telegram,
					Direction: messaging.Inbound, From: thread.Contact, To: thread.AgentNumber, Content: messaging.Content{Kind: messaging.KindText, Text: "hi"},
					Status: messaging.Received, CreatedAt: now.Add(time.Duration(n) * time.Second), UpdatedAt: now}
			}
			require.NoError(t, db.Commit(ctx, writes.Batch{Messages: ms}))
		}
		if dialect == store.Postgres {
			_, err := db.Bun().ExecContext(ctx, "ANALYZE messages")
			require.NoError(t, err)
		}
		queries := &capturedQueries{marker: "FROM messages WHERE thread_id"}
		db.AddQueryHook(queries)

		// A cursor 1,900 messages deep.
		before := appmessaging.MessageCursor{CreatedAt: now.Add(100 * time.Second), ID: "msg_deep00100"}
		page, err := r.ThreadMessages(ctx, "acc_rows", thread.ID, &before, 20)
		require.NoError(t, err)
		require.Len(t, page, 20)
		require.Equal(t, "msg_deep00099", page[0].ID)
		require.Equal(t, "msg_deep00080", page[19].ID)
		query := queries.last(t)

		if dialect == store.Postgres {
			var plan []string
			require.NoError(t, db.Bun().NewRaw("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+query).Scan(ctx, &plan))
			text := strings.Join(plan, "\n")
			require.Contains(t, text, "Index Cond: ((thread_id = 'thr_deep'::text) AND (ROW(created_at, id) < ROW(", "the cursor bounds the index scan:\n%s", text)
			require.NotContains(t, text, "Rows Removed by Filter", "no newer message is read and thrown away:\n%s", text)
			return
		}
		// SQLite's plan rows are (id, parent, notused, detail).
		var plan []string
		rows, err := db.Bun().QueryContext(ctx, "EXPLAIN QUERY PLAN "+query)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &notUsed, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{"SEARCH messages USING INDEX messages_thread_recent (thread_id=? AND (created_at,id)<(?,?))"}, plan,
			"one range of the index, no sort")
	})
}

// A message less than a minute after its thread's last activity updates
// the thread in place (a HOT update: no index takes an entry), because no
// index of threads is on the activity; one later than that, or earlier
// than the thread's listed_at, moves listed_at, the listing index's key.
func TestThreadActivityUpdatesInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openWithAccount(t, store.Postgres)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, db.MessagingStore().InsertThread(ctx, messaging.Thread{ID: "thr_hot", AccountID: "acc_rows", Service: account.Telegram,
		Type: messaging.Individual, AgentNumber: "+15550003333", Contact: "+15550004444", CreatedAt: now, UpdatedAt: now}, nil))

	tx, err := db.Bun().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	touch := func(after time.Duration) (updates, hot int, listed time.Time) {
		t.Helper()
		_, err := tx.ExecContext(ctx, "UPDATE threads SET last_message_at = ?, updated_at = ? WHERE id = 'thr_hot'", now.Add(after), now.Add(after))
		require.NoError(t, err)
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT s.n_tup_upd, s.n_tup_hot_upd, t.listed_at
			FROM pg_stat_xact_user_tables AS s, threads AS t WHERE s.relname = 'threads' AND t.id = 'thr_hot'`).Scan(&updates, &hot, &listed))
		return updates, hot, listed.UTC()
	}
	for i, after := range []time.Duration{10 * time.Second, 30 * time.Second, time.Minute} {
		updates, hot, listed := touch(after)
		require.Equal(t, i+1, updates)
		require.Equal(t, i+1, hot, "an activity within a minute of listed_at is a HOT update")
		require.Equal(t, now, listed)
	}
	updates, hot, listed := touch(time.Minute + time.Second)
	require.Equal(t, []any{4, 3, now.Add(time.Minute + time.Second)}, []any{updates, hot, listed}, "past the minute, listed_at moves to the activity")
	updates, hot, listed = touch(time.Second)
	require.Equal(t, []any{5, 3, now.Add(time.Second)}, []any{updates, hot, listed}, "an activity that moves back moves listed_at back")
}

// A page of an account's threads reads the threads active in the minute
// before the page's last one, not every thread of the account.
func TestThreadPageReadsAWindowOfTheListingIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openWithAccount(t, store.Postgres)
	_, err := db.Bun().ExecContext(ctx, `INSERT INTO threads (id, account_id, service, type, agent_number, contact, last_message_at, created_at, updated_at)
		SELECT 'thr_w' || lpad(i::text, 5, '0'), 'acc_rows', 'telegram', 'individual', '+15550003333', '+1555' || i,
			now() - i * INTERVAL '10 seconds', now() - INTERVAL '1 day', now()
		FROM generate_series(1, 10000) AS i`)
	require.NoError(t, err)
	_, err = db.Bun().ExecContext(ctx, "ANALYZE threads")
	require.NoError(t, err)
	queries := &capturedQueries{marker: "FROM \"threads\""}
	db.AddQueryHook(queries)

	page, err := db.MessagingStore().ThreadPage(ctx, appmessaging.ThreadPageQuery{AccountID: "acc_rows", Limit: 21})
	require.NoError(t, err)
	require.Len(t, page, 21)
	require.Equal(t, "thr_w00001", page[0].Thread.ID)
	require.Equal(t, "thr_w00021", page[20].Thread.ID)
	page, err = db.MessagingStore().ThreadPage(ctx, appmessaging.ThreadPageQuery{AccountID: "acc_rows", After: &page[20].Cursor, Limit: 21})
	require.NoError(t, err)
	require.Equal(t, "thr_w00022", page[0].Thread.ID)

	var plan []string
	require.NoError(t, db.Bun().NewRaw("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+queries.last(t)).Scan(ctx, &plan))
	text := strings.Join(plan, "\n")
	require.Regexp(t, `Index Scan using threads_listed_idx on threads thread_row \(actual rows=\d\d loops=1\)\n *Index Cond: \(.*AND \(listed_at >= COALESCE\(`, text,
		"the floor bounds the index scan, which reads fewer than 100 threads:\n%s", text)
	require.NotContains(t, text, "rows=10000", "not every thread of the account is read:\n%s", text)
	require.NotContains(t, text, "Seq Scan", text)
}
