package erasure_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

type keys struct{}

func (keys) Hash(purpose, value string) []byte {
	m := hmac.New(sha256.New, []byte("test key"))
	m.Write([]byte(purpose + "\x00" + value))
	return m.Sum(nil)
}

// store finds target for every identifier, remembers the erased hashes
// and the batches written.
type store struct {
	target  erasure.Target
	erased  map[string]bool
	batches []writes.Batch
}

func (s *store) Decide(ctx context.Context, decide func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error)) error {
	b, err := decide(ctx, s)
	if err != nil {
		return err
	}
	s.batches = append(s.batches, b)
	for _, e := range b.Erasures {
		s.erased[e.Record.IdentifierHash] = true
	}
	return nil
}

func (s *store) ErasureTarget(context.Context, string, erasure.Identifier) (erasure.Target, error) {
	return s.target, nil
}

func (s *store) Erased(_ context.Context, _, hash string) (bool, error) { return s.erased[hash], nil }

// Records lists the records of the batches written, newest first.
func (s *store) Records(_ context.Context, q apperasure.Query) ([]erasure.Record, error) {
	var out []erasure.Record
	for i := len(s.batches) - 1; i >= 0; i-- {
		for _, e := range s.batches[i].Erasures {
			r := e.Record
			if r.AccountID == q.AccountID && (q.After == nil || r.At.Before(q.After.At) || r.At.Equal(q.After.At) && r.ID < q.After.ID) {
				out = append(out, r)
			}
		}
	}
	return out[:min(len(out), q.Limit)], nil
}

func TestErase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := ident.New(ident.Account)
	now := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &store{erased: map[string]bool{}}
	svc := apperasure.New(st, keys{}, func() time.Time { return now })
	contact := ident.New(ident.Contact)

	// A contact id the account never had is not found, and nothing is
	// written.
	_, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: erasure.Identifier{Kind: erasure.Contact, Value: contact}, RequestedBy: "cli"})
	require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
	require.Empty(t, st.batches)

	// Found: the record counts what goes, zeros left out, and names the
	// person by a keyed hash only.
	st.target = erasure.Target{AccountID: acc, Found: true, ContactIDs: []string{contact}, Counts: map[string]int{"people": 1, "messages": 3, "emails": 0}}
	rec, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: erasure.Identifier{Kind: erasure.Contact, Value: contact}, RequestedBy: "key:key_1"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"people": 1, "messages": 3}, rec.Counts)
	require.Equal(t, 4, rec.Total())
	require.Equal(t, now, rec.At)
	require.Equal(t, "key:key_1", rec.RequestedBy)
	require.NotContains(t, rec.IdentifierHash, contact)
	require.Len(t, st.batches, 1)
	require.Equal(t, st.target.ContactIDs, st.batches[0].Erasures[0].Target.ContactIDs)

	// Again, once the contact is gone: found by its hash, zero counts.
	st.target = erasure.Target{AccountID: acc, Counts: map[string]int{"people": 0}}
	again, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: erasure.Identifier{Kind: erasure.Contact, Value: contact}, RequestedBy: "cli"})
	require.NoError(t, err)
	require.Empty(t, again.Counts)
	require.Equal(t, rec.IdentifierHash, again.IdentifierHash)

	// A phone number nothing is stored about is erased with zero counts.
	phone, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: erasure.Identifier{Kind: erasure.Phone, Value: "+14155550100"}, RequestedBy: "cli"})
	require.NoError(t, err)
	require.Zero(t, phone.Total())

	// Email addresses and @usernames hash alike whatever their case.
	require.Equal(t, svc.Hash(erasure.Identifier{Kind: erasure.Email, Value: "Ann@Example.com"}), svc.Hash(erasure.Identifier{Kind: erasure.Email, Value: "ann@example.com "}))
	require.NotEqual(t, svc.Hash(erasure.Identifier{Kind: erasure.Phone, Value: "+14155550100"}), svc.Hash(erasure.Identifier{Kind: erasure.UserID, Value: "+14155550100"}))

	// Values that do not fit their kind are refused at their field.
	for _, id := range []erasure.Identifier{
		{Kind: erasure.Contact, Value: "thr_x"}, {Kind: erasure.Phone, Value: "14155550100"}, {Kind: erasure.UserID, Value: ""},
		{Kind: erasure.UserID, Value: "two words"}, {Kind: erasure.Email, Value: "nope"}, {Kind: "name", Value: "Ann"},
	} {
		_, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: id, ValuePath: []any{"value"}, KindPath: []any{"kind"}})
		require.True(t, failure.Is(err, failure.KindInvalid), "%v: %v", id, err)
	}
}

func TestRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := ident.New(ident.Account)
	now := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &store{erased: map[string]bool{}}
	svc := apperasure.New(st, keys{}, func() time.Time { now = now.Add(time.Second); return now })
	var ids []string
	for i := range 5 {
		rec, err := svc.Erase(ctx, apperasure.Request{AccountID: acc, ID: erasure.Identifier{Kind: erasure.Phone, Value: fmt.Sprintf("+1415555010%d", i)}, RequestedBy: "cli"})
		require.NoError(t, err)
		ids = append([]string{rec.ID}, ids...)
	}

	var got []string
	cursor := ""
	for {
		page, err := svc.Records(ctx, acc, cursor, "cursor", 2)
		require.NoError(t, err)
		for _, r := range page.Records {
			got = append(got, r.ID)
		}
		if page.Next == "" {
			require.Len(t, page.Records, 1, "the last page")
			break
		}
		require.Len(t, page.Records, 2)
		cursor = page.Next
	}
	require.Equal(t, ids, got, "newest first, each once")

	all, err := svc.Records(ctx, acc, "", "cursor", 0)
	require.NoError(t, err)
	require.Len(t, all.Records, 5, "20 by default")
	require.Empty(t, all.Next)

	for _, bad := range []string{"nope", apperasure.Cursor(erasure.Record{ID: "thr_1", At: now}), "ZTF8eHx5"} {
		_, err := svc.Records(ctx, acc, bad, "cursor", 2)
		require.True(t, failure.Is(err, failure.KindInvalid), "%q: %v", bad, err)
	}
	_, err = svc.Records(ctx, "nope", "", "cursor", 2)
	require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
}
