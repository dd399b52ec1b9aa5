package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/retention"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// fakeStore is a retention.Store with function fields.
type fakeStore struct {
	accounts func(ctx context.Context) ([]retention.AccountRetention, error)
	prune    func(ctx context.Context, q retention.Query) (retention.Step, error)
}

func (f fakeStore) AccountRetentions(ctx context.Context) ([]retention.AccountRetention, error) {
	return f.accounts(ctx)
}

func (f fakeStore) PruneHistory(ctx context.Context, q retention.Query) (retention.Step, error) {
	return f.prune(ctx, q)
}

// fakeLock is a retention.Lock that another process holds when held.
type fakeLock struct{ held bool }

func (l fakeLock) Exclusively(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if l.held {
		return false, nil
	}
	return true, fn(ctx)
}

var now = time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC)

func TestAPassCutsEachAccountAtItsOwnPeriod(t *testing.T) {
	t.Parallel()
	cutoffs := map[string]map[retention.Kind]time.Time{}
	store := fakeStore{
		accounts: func(context.Context) ([]retention.AccountRetention, error) {
			return []retention.AccountRetention{{AccountID: "acc_default"}, {AccountID: "acc_decade", Days: 3650}}, nil
		},
		prune: func(_ context.Context, q retention.Query) (retention.Step, error) {
			if cutoffs[q.AccountID] == nil {
				cutoffs[q.AccountID] = map[retention.Kind]time.Time{}
			}
			cutoffs[q.AccountID][q.Kind] = q.Before
			return retention.Step{Deleted: 1, Done: true}, nil
		},
	}
	p := retention.New(store, fakeLock{}, retention.Options{Retention: 45 * account.Day, Now: func() time.Time { return now }})
	report, err := p.Prune(context.Background())
	require.NoError(t, err)
	require.True(t, report.Ran)
	for _, kind := range retention.Kinds {
		require.Equal(t, now.Add(-45*account.Day), cutoffs["acc_default"][kind], "the server's period for %s", kind)
		require.Equal(t, now.Add(-3650*account.Day), cutoffs["acc_decade"][kind], "the account's own for %s", kind)
		require.Equal(t, 2, report.Deleted[kind])
	}
}

func TestAPassWalksEachKindToItsEnd(t *testing.T) {
	t.Parallel()
	var afters []int64
	store := fakeStore{
		accounts: func(context.Context) ([]retention.AccountRetention, error) {
			return []retention.AccountRetention{{AccountID: "acc_a"}}, nil
		},
		prune: func(_ context.Context, q retention.Query) (retention.Step, error) {
			if q.Kind != retention.Events {
				return retention.Step{Done: true}, nil
			}
			require.Equal(t, 7, q.Limit)
			afters = append(afters, q.After)
			// Three batches: one that deleted nothing (all still
			// needed), one that deleted some, and the last.
			switch q.After {
			case 0:
				return retention.Step{Next: 7}, nil
			case 7:
				return retention.Step{Deleted: 5, Next: 14}, nil
			}
			return retention.Step{Deleted: 2, Next: 16, Done: true}, nil
		},
	}
	p := retention.New(store, fakeLock{}, retention.Options{Batch: 7, Now: func() time.Time { return now }})
	report, err := p.Prune(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int64{0, 7, 14}, afters, "each batch resumes where the last one ended")
	require.Equal(t, 7, report.Deleted[retention.Events])
}

func TestAPassWhileAnotherProcessPrunesDoesNothing(t *testing.T) {
	t.Parallel()
	store := fakeStore{
		accounts: func(context.Context) ([]retention.AccountRetention, error) {
			t.Error("read the accounts while another process prunes")
			return nil, nil
		},
	}
	report, err := retention.New(store, fakeLock{held: true}, retention.Options{}).Prune(context.Background())
	require.NoError(t, err)
	require.False(t, report.Ran)
}

func TestAFailedBatchEndsThePass(t *testing.T) {
	t.Parallel()
	boom := errors.New("database away")
	calls := 0
	store := fakeStore{
		accounts: func(context.Context) ([]retention.AccountRetention, error) {
			return []retention.AccountRetention{{AccountID: "acc_a"}, {AccountID: "acc_b"}}, nil
		},
		prune: func(context.Context, retention.Query) (retention.Step, error) {
			calls++
			return retention.Step{}, boom
		},
	}
	_, err := retention.New(store, fakeLock{}, retention.Options{}).Prune(context.Background())
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls, "the pass stops at the first failure; the next one starts over")
}
