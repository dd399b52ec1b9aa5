package messaging_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A person's first messages to two agent numbers at the same moment make
// one contact, not two, on every database.
func TestFirstMessagesAtOnceMakeOneContact(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		db := dbtest.Open(t, dialect)
		keys, err := keyring.New(bytes.Repeat([]byte{3}, 32))
		require.NoError(t, err)
		acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
		a, _, err := acc.CreateAccount(ctx, "Acme")
		require.NoError(t, err)
		var numbers []string
		for _, n := range []string{"+14155550100", "+14155550101"} {
			_, err := acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: n, Service: "whatsapp", Provider: "sandbox", Enabled: true})
			require.NoError(t, err)
			numbers = append(numbers, n)
		}
		svc := messaging.NewService(messaging.Deps{Committer: db, Store: db.MessagingStore(),
			Providers: messaging.ProviderSet{account.ProviderSandbox: &fakeProvider{}}, Opener: acc})

		const people = 20
		var wg sync.WaitGroup
		errs := make(chan error, 2*people)
		for i := range people {
			for _, to := range numbers {
				wg.Go(func() {
					_, err := svc.Receive(ctx, messaging.InboundInput{AccountID: a.ID, Service: "whatsapp", From: fmt.Sprintf("+1415555%04d", 2000+i), To: to,
						Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
					errs <- err
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		page, err := svc.Contacts(ctx, a.ID, "", "", "", 100)
		require.NoError(t, err)
		require.Len(t, page.Contacts, people, "one contact per person")
	})
}
