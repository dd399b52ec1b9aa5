package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
)

// TestChannelsContract checks the storage of the channel use cases on
// both dialects.
func TestChannelsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Channels(t, func(t *testing.T) storetest.ChannelsFixture {
				db := dbtest.Open(t, dialect)
				return storetest.ChannelsFixture{Store: db.ChannelStore(), Accounts: db.AccountStore(), PruneUpdates: db.ChannelStore().PruneUpdates}
			})
		})
	}
}
