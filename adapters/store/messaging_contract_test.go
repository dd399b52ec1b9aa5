package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/writes"
)

func TestMessagingContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Messaging(t, func(t *testing.T) storetest.MessagingFixture {
				db := dbtest.Open(t, dialect)
				return storetest.MessagingFixture{Store: db.MessagingStore(), Accounts: db.AccountStore(), Committer: batchedCommitter(db), Pages: db.MessagingStore()}
			})
		})
	}
}

// batchedCommitter writes the batches of concurrent callers together;
// inlineCommitter writes each alone.
func batchedCommitter(db *store.DB) writes.Committer { return db }

func inlineCommitter(db *store.DB) writes.Committer { return db.Inline() }

func TestContactsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		for name, committer := range map[string]func(*store.DB) writes.Committer{"batched": batchedCommitter, "inline": inlineCommitter} {
			t.Run(string(dialect)+"/"+name, func(t *testing.T) {
				t.Parallel()
				storetest.Contacts(t, func(t *testing.T) storetest.MessagingFixture {
					db := dbtest.Open(t, dialect)
					return storetest.MessagingFixture{Store: db.MessagingStore(), Accounts: db.AccountStore(), Committer: committer(db), Pages: db.MessagingStore()}
				})
			})
		}
	}
}
