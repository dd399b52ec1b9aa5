package store_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
)

func TestJobLeasesContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Jobs(t, func(t *testing.T) storetest.JobQueue {
				return dbtest.Open(t, dialect).JobQueue()
			})
		})
	}
}

var _ storetest.JobQueue = store.JobQueue{}
