package cron_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// watchedStore tells whether one of its transactions is open.
type watchedStore struct {
	appcron.Store
	open atomic.Int32
}

func (s *watchedStore) Decide(ctx context.Context, decide func(ctx context.Context, tx appcron.TxReads) (writes.Batch, error)) error {
	return s.Store.Decide(ctx, func(ctx context.Context, tx appcron.TxReads) (writes.Batch, error) {
		s.open.Add(1)
		defer s.open.Add(-1)
		return decide(ctx, tx)
	})
}

func (s *watchedStore) Repos() appcron.Repos { return watchedRepos{Repos: s.Store.Repos(), s: s} }

// watchedRepos tells its store when a change's transaction is open.
type watchedRepos struct {
	appcron.Repos
	s *watchedStore
}

func (r watchedRepos) ChangeJob(ctx context.Context, accountID, id string, change func(cron.Job) (cron.Job, error)) (cron.Job, error) {
	return r.Repos.ChangeJob(ctx, accountID, id, func(j cron.Job) (cron.Job, error) {
		r.s.open.Add(1)
		defer r.s.open.Add(-1)
		return change(j)
	})
}

// recordingChecker refuses the URLs in refuse and counts the checks made
// while a transaction of store was open.
type recordingChecker struct {
	store  *watchedStore
	refuse map[string]bool
	checks atomic.Int32
	inTx   atomic.Int32
}

func (c *recordingChecker) CheckURL(_ context.Context, raw string) error {
	c.checks.Add(1)
	if c.store.open.Load() > 0 {
		c.inTx.Add(1)
	}
	if c.refuse[raw] {
		return errors.New("resolves to a private address")
	}
	return nil
}

// An endpoint's address is checked (which may wait on a name server)
// before the transaction that saves the job, on creation and on update,
// so that a slow name server never holds a connection of the pool; the
// verdict still applies only to an address that changed.
func TestEndpointURLsAreCheckedOutsideTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, account := sqliteCron(t, time.Now())
	store := &watchedStore{Store: db.CronStore()}
	urls := &recordingChecker{store: store, refuse: map[string]bool{"https://private.example/hook": true}}
	svc := appcron.NewService(appcron.Deps{Store: store, Parser: cronexpr.New(), URLs: urls})

	j, err := svc.Create(ctx, account, cron.Job{EndpointURL: "https://public.example/hook", Method: "POST",
		Spec: cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "UTC"}}, nil)
	require.NoError(t, err)

	set := func(url string) appcron.Patch {
		return appcron.Patch{EndpointURL: appcron.Value[string]{Set: true, V: url}}
	}
	_, err = svc.Update(ctx, account, j.ID, set("https://private.example/hook"))
	require.True(t, failure.Is(err, failure.KindInvalid), "a refused address is refused: %v", err)
	_, err = svc.Update(ctx, account, j.ID, set("https://other.example/hook"))
	require.NoError(t, err)
	// The same address again: checked, but the verdict does not count.
	urls.refuse["https://other.example/hook"] = true
	_, err = svc.Update(ctx, account, j.ID, set("https://other.example/hook"))
	require.NoError(t, err, "an unchanged address is not checked against today's rules")

	require.Equal(t, int32(4), urls.checks.Load())
	require.Zero(t, urls.inTx.Load(), "an address was checked inside a transaction")
}
