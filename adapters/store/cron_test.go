package store_test

import (
	"context"
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/account"
)

func TestCronContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Cron(t, func(t *testing.T) (appcron.Store, func(context.Context, account.Account) error) {
				db := dbtest.Open(t, dialect)
				return db.CronStore(), func(ctx context.Context, a account.Account) error { return db.AccountStore().InsertAccount(ctx, a) }
			})
		})
	}
}
