package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// A batch INSERT on Postgres leaves out the columns whose default is the
// zero value every row holds; the rows it writes must be the rows writing
// every column writes.
func TestSparseInsertsWriteWhatFullInsertsWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t, store.Postgres)
	now := time.Now().UTC().Truncate(time.Microsecond)
	batch := func(n string) writes.Batch {
		return writes.Batch{
			Messages: []messaging.Message{{ID: "msg_sparse" + n, AccountID: "acc_sparse", ThreadID: "thr_sparse", Service: account.WhatsApp,
				Direction: messaging.OutboundAPI, From: "+15550001000", To: "+15550002000",
				Content: messaging.Content{Kind: messaging.KindText, Text: "hello"}, Status: messaging.Queued, CreatedAt: now, UpdatedAt: now}},
			Events: []event.Event{{ID: "evt_sparse" + n, AccountID: "acc_sparse", Type: "message.queued", ThreadID: "thr_sparse",
				Payload: []byte(`{"status":"queued"}`), CreatedAt: now}},
			Jobs: []jobs.EnqueueParams{{Kind: "sparse.test", Payload: []byte(`{}`), AccountID: "acc_sparse", MaxAttempts: 3, RunAt: now}},
		}
	}

	sparse := db.BatchText(batch("1"))
	require.NotContains(t, sparse, `"media_ref"`, "the sends leave out their empty columns")
	require.Contains(t, sparse, `"body"`)
	require.NoError(t, db.Inline().Commit(ctx, batch("1")))
	db.ForgetZeroDefaults()
	require.Contains(t, db.BatchText(batch("2")), `"media_ref"`)
	require.NoError(t, db.Inline().Commit(ctx, batch("2")))

	for _, q := range []string{
		`SELECT (to_jsonb(m) - 'id')::text FROM messages m WHERE account_id = 'acc_sparse' ORDER BY id`,
		`SELECT (to_jsonb(e) - 'id' - 'seq')::text FROM events e WHERE account_id = 'acc_sparse' ORDER BY seq`,
		`SELECT (to_jsonb(j) - 'id' - 'created_at')::text FROM jobs j WHERE kind = 'sparse.test' ORDER BY id`,
	} {
		var rows []string
		require.NoError(t, db.Bun().NewRaw(q).Scan(ctx, &rows))
		require.Len(t, rows, 2, q)
		require.JSONEq(t, rows[1], rows[0], q)
	}
}
