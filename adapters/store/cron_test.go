package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// cronUnderTest is the cron store with a look at the queue's run jobs.
type cronUnderTest struct {
	store.CronStore
	db *store.DB
}

func (c cronUnderTest) RunJobTimes(ctx context.Context) ([]time.Time, error) {
	var at []int64
	if err := c.db.Bun().NewRaw("SELECT run_at FROM jobs WHERE kind = ? ORDER BY run_at", appcron.RunKind).Scan(ctx, &at); err != nil {
		return nil, err
	}
	out := make([]time.Time, len(at))
	for i, us := range at {
		out[i] = time.UnixMicro(us).UTC()
	}
	return out, nil
}

func TestCronContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Cron(t, func(t *testing.T) (appcron.Store, func(context.Context, account.Account) error) {
				db := dbtest.Open(t, dialect)
				return cronUnderTest{db.CronStore(), db}, func(ctx context.Context, a account.Account) error { return db.AccountStore().InsertAccount(ctx, a) }
			})
		})
	}
}
