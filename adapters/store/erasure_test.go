package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// An erasure ends the jobs that act on what goes, the one in flight too:
// the attempt its worker finishes afterwards writes nothing back, so its
// error, which quotes the person, is not stored (docs/retention.md).
func TestErasureEndsTheJobsInFlight(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := dbtest.Open(t, dialect)
			now := time.Now().UTC().Truncate(time.Microsecond)
			acct := account.Account{ID: ident.New(ident.Account), Name: "erasing", Version: 1, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.AccountStore().InsertAccount(ctx, acct))

			const person = "ann@example.org"
			id := ident.New(ident.Email)
			sent := email.Email{
				ID: id, AccountID: acct.ID, Direction: email.Outbound, Mailbox: "agent@mail.example.com",
				ThreadID: email.StartedThreadID(id), From: "agent@mail.example.com", To: person,
				Subject: "Hello", Body: "Hi Ann", MessageID: email.SentMessageID(id, "mail.example.com"),
				Status: email.Queued, CreatedAt: now, UpdatedAt: now,
			}
			require.NoError(t, db.Commit(ctx, writes.Batch{Emails: []email.Email{sent}}))
			q := db.JobQueue()
			enqueue := func() int64 {
				job, err := q.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "email.deliver", Payload: []byte(`{"email_id":"` + id + `"}`), MaxAttempts: 5, AccountID: acct.ID})
				require.NoError(t, err)
				return job
			}
			inFlight, queued := enqueue(), enqueue()
			claimed, err := q.ClaimJobs(ctx, "worker", []jobs.Lease{{Kind: "email.deliver", Until: now.Add(time.Minute)}}, 1, now.Add(time.Second), jobs.ClaimFilter{})
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			require.Equal(t, inFlight, claimed[0].ID)

			erasures := db.ErasureStore()
			require.NoError(t, erasures.Decide(ctx, func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error) {
				target, err := tx.ErasureTarget(ctx, acct.ID, erasure.Identifier{Kind: erasure.Email, Value: person})
				if err != nil {
					return writes.Batch{}, err
				}
				record := erasure.Record{ID: ident.New(ident.Erasure), AccountID: acct.ID, RequestedBy: "test", Kind: erasure.Email, IdentifierHash: "hash", At: now, Counts: target.Counts}
				return writes.Batch{Erasures: []writes.Erasure{{Record: record, Target: target}}}, nil
			}))

			// The worker's attempt ends after the erasure, quoting her.
			require.NoError(t, q.RetryJob(ctx, "worker", inFlight, now.Add(time.Minute), "550 no mailbox "+person))
			require.NoError(t, q.KillJob(ctx, "worker", inFlight, now, "550 no mailbox "+person))
			for _, job := range []int64{inFlight, queued} {
				var state string
				var lastError sql.NullString
				require.NoError(t, db.Bun().NewRaw("SELECT state, last_error FROM jobs WHERE id = ?", job).Scan(ctx, &state, &lastError))
				require.Equal(t, string(jobs.StateCancelled), state, "job %d", job)
				require.False(t, lastError.Valid, "job %d keeps no error: %q", job, lastError.String)
			}
		})
	}
}
