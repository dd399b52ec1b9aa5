package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
)

func TestRateBucketsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.RateBuckets(t, func(t *testing.T) storetest.Buckets { return dbtest.Open(t, dialect).RateBuckets() })
		})
	}
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		storetest.RateBuckets(t, func(*testing.T) storetest.Buckets { return ratelimit.NewMemoryBuckets() })
	})
}
