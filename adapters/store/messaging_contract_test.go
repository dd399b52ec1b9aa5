package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
)

func TestMessagingContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Messaging(t, func(t *testing.T) storetest.MessagingFixture {
				db := dbtest.Open(t, dialect)
				return storetest.MessagingFixture{Store: messagingStore(db), Accounts: accountsStore(db), Committer: batchedCommitter(db)}
			})
		})
	}
}

// The ports of a *store.DB that the contract tests of this package's
// files (messaging, committer, channels) run against, in one place.

func messagingStore(db *store.DB) messaging.Store {
	return store.Bind(db, func(r *store.Repos) messaging.Repos { return r })
}

func channelsStore(db *store.DB) channels.Store {
	return store.Bind(db, func(r *store.Repos) channels.Repos { return r })
}

func accountsStore(db *store.DB) accounts.Store {
	return store.Bind(db, func(r *store.Repos) accounts.Repos { return r })
}

func webhooksStore(db *store.DB) webhooks.Store {
	return store.Bind(db, func(r *store.Repos) webhooks.Repos { return r })
}

func emailStore(db *store.DB) appemail.Store {
	return store.Bind(db, func(r *store.Repos) appemail.Repos { return r })
}

// updatePruner forgets handled provider updates (the channel contract).
func updatePruner(db *store.DB) func(ctx context.Context, before time.Time) (int64, error) {
	return db.Repos().PruneUpdates
}

func idempotencyKeys(db *store.DB) idempotency.Store { return db }

func jobClaimer(db *store.DB) storetest.JobClaimer { return db.Repos() }

// batchedCommitter writes the batches of concurrent callers together;
// inlineCommitter writes each alone.
func batchedCommitter(db *store.DB) writes.Committer { return db }

func inlineCommitter(db *store.DB) writes.Committer { return db.Inline() }
