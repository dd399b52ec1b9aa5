package store_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/channels"
)

// TestPollLeasesContract checks the poll leases and offsets on both
// dialects, each process on a connection pool of its own.
func TestPollLeasesContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.PollLeases(t, func(t *testing.T) storetest.PollLeasesFixture {
				dbURL := dbtest.URL(t, dialect)
				open := func(t *testing.T, rawURL string, skew time.Duration) *store.DB {
					db, err := store.Open(context.Background(), rawURL, store.Options{Now: func() time.Time { return time.Now().Add(skew) }})
					require.NoError(t, err)
					t.Cleanup(func() { _ = db.Close() })
					return db
				}
				f := storetest.PollLeasesFixture{
					Accounts: open(t, dbURL, 0).AccountStore(),
					Open: func(t *testing.T, skew time.Duration) channels.PollLeases {
						return open(t, dbURL, skew).PollLeases()
					},
				}
				if dialect == store.Postgres {
					f.Behind = func(t *testing.T) (channels.PollLeases, storetest.PollFaults) {
						u, err := url.Parse(dbURL)
						require.NoError(t, err)
						proxy := faultproxy.Start(t, u.Host)
						return open(t, proxy.URL(dbURL), 0).PollLeases(), storetest.PollFaults{Freeze: proxy.Freeze, Thaw: proxy.Thaw, Cut: proxy.Cut}
					}
				}
				return f
			})
		})
	}
}
