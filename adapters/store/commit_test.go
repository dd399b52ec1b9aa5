package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/writes"
)

// The committer contract: both committers (inline and batched) on both
// dialects write a batch all or nothing, and what they wrote reads back.
func TestCommitterContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		for name, committer := range map[string]func(db *store.DB) writes.Committer{
			"inline":  inlineCommitter,
			"batched": batchedCommitter,
		} {
			t.Run(string(dialect)+"/"+name, func(t *testing.T) {
				t.Parallel()
				storetest.Committer(t, func(t *testing.T) storetest.CommitterFixture {
					db := dbtest.Open(t, dialect)
					return storetest.CommitterFixture{
						Committer: committer(db),
						Accounts:  db.AccountStore(),
						Messaging: db.MessagingStore(),
						Webhooks:  db.WebhookStore(),
						Email:     db.EmailStore(),
						Keys:      db,
						Jobs:      db.JobQueue(),
					}
				})
			})
		}
	}
}
