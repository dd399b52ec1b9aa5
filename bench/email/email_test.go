package email

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/bootstrap"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// The seeding SQL must write what Send writes, and a seeded email must deliver.
func TestSeedMatchesTheUseCase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t, store.Postgres)
	keys, err := keyring.New(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(store.Bind(db, func(r *store.Repos) accounts.Repos { return r }), keys, accounts.Options{})
	a, _, err := acc.CreateAccount(ctx, "bench")
	require.NoError(t, err)
	mailbox := sandbox.New(nil)
	svc := appemail.NewService(appemail.Deps{
		Committer: db, Store: store.Bind(db, func(r *store.Repos) appemail.Repos { return r }), Sender: mailbox,
		ServiceDomain: bootstrap.Defaults().EmailDomain,
	})
	_, err = svc.CreateAddress(ctx, a.ID, senderLocal, bootstrap.Defaults().EmailDomain)
	require.NoError(t, err)
	sent, err := svc.Send(ctx, appemail.SendInput{
		AccountID: a.ID, SenderAddress: senderAddress(), RecipientAddress: "user5@example.org",
		Subject: "Bench email", Body: "<p>Hello from the bench</p>", Headers: map[string]any{"cc": "copy@example.org"},
	})
	require.NoError(t, err)

	require.NoError(t, seedQueued(ctx, db, a.ID, 5, 6, time.Now().UTC().Truncate(time.Microsecond)))
	var id string
	var payload []byte
	var maxAttempts int
	var uniqueKey *string
	require.NoError(t, db.Bun().NewRaw("SELECT convert_from(payload, 'UTF8'), max_attempts, unique_key FROM jobs WHERE kind = ? ORDER BY id DESC LIMIT 1 OFFSET 1", appemail.DeliverKind).Scan(ctx, &payload, &maxAttempts, &uniqueKey))
	require.NoError(t, db.Bun().NewRaw("SELECT id FROM emails WHERE id LIKE 'eml_aaaa%' ORDER BY id LIMIT 1").Scan(ctx, &id))
	require.Equal(t, `{"email_id":"`+id+`"}`, string(payload))
	require.Nil(t, uniqueKey)
	require.Equal(t, appemail.DeliveryAttempts, maxAttempts)

	seeded, err := svc.Email(ctx, a.ID, id)
	require.NoError(t, err)
	want := sent
	want.ID, want.MessageID, want.CreatedAt, want.UpdatedAt = seeded.ID, "<"+seeded.ID+"@"+bootstrap.Defaults().EmailDomain+">", seeded.CreatedAt, seeded.UpdatedAt
	require.Equal(t, want, seeded)

	require.NoError(t, svc.Work(ctx, jobs.Job{Kind: appemail.DeliverKind, Payload: payload, Attempt: 1, MaxAttempts: maxAttempts}))
	got, err := svc.Email(ctx, a.ID, id)
	require.NoError(t, err)
	require.Equal(t, "sent", string(got.Status))
	require.Len(t, mailbox.Sent(), 1)
}
