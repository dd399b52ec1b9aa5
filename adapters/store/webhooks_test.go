package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

func TestWebhooksContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Webhooks(t, func(t *testing.T) storetest.WebhookFixture {
				db := dbtest.Open(t, dialect)
				return storetest.WebhookFixture{
					Store: db.WebhookStore(),
					NewAccount: func(t *testing.T) string {
						now := time.Now().UTC().Truncate(time.Microsecond)
						a := account.Account{ID: ident.New(ident.Account), Name: "hooks", CreatedAt: now, UpdatedAt: now}
						require.NoError(t, db.AccountStore().InsertAccount(context.Background(), a))
						return a.ID
					},
				}
			})
		})
	}
}
