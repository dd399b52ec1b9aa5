package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Jobs enqueued in a transaction behave the same whether the store writes
// them at once or keeps them for the commit (Postgres, no unique key).
func TestJobsEnqueuedInATransaction(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()

			t.Run("CommittedWithTheirIDs", func(t *testing.T) {
				t.Parallel()
				db := dbtest.Open(t, dialect)
				var ids []int64
				require.NoError(t, db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
					for range 3 {
						id, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "buffered", Payload: []byte(`{"n":1}`), PaceKey: "p"})
						if err != nil {
							return err
						}
						ids = append(ids, id)
					}
					return nil
				}))
				require.Len(t, ids, 3)
				require.NotEqual(t, ids[0], ids[1])
				claimed, err := db.Repos().ClaimJobs(ctx, "w", []jobs.Lease{{Kind: "buffered", Until: time.Now().Add(time.Minute)}}, 10, time.Now().Add(time.Second), jobs.ClaimFilter{})
				require.NoError(t, err)
				require.Len(t, claimed, 3)
				got := map[int64]bool{}
				for _, j := range claimed {
					got[j.ID] = true
					require.Equal(t, []byte(`{"n":1}`), j.Payload)
					require.Equal(t, "p", j.PaceKey)
					require.Equal(t, jobs.DefaultMaxAttempts, j.MaxAttempts)
				}
				for _, id := range ids {
					require.True(t, got[id], "job %d was returned by EnqueueJob and must exist", id)
				}
			})

			t.Run("ValuesWrittenAsGiven", func(t *testing.T) {
				t.Parallel()
				db := dbtest.Open(t, dialect)
				kind, pace := `odd'kind?$1 \"é"`, `pace'; DROP TABLE jobs; --?`
				payload := []byte(`{"q":"it's ? $1 \\ \u0000"}`)
				require.NoError(t, db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
					_, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: kind, Payload: payload, PaceKey: pace, MaxAttempts: 7})
					return err
				}))
				claimed, err := db.Repos().ClaimJobs(ctx, "w", []jobs.Lease{{Kind: kind, Until: time.Now().Add(time.Minute)}}, 10, time.Now().Add(time.Second), jobs.ClaimFilter{})
				require.NoError(t, err)
				require.Len(t, claimed, 1)
				require.Equal(t, kind, claimed[0].Kind)
				require.Equal(t, payload, claimed[0].Payload)
				require.Equal(t, pace, claimed[0].PaceKey)
				require.Equal(t, 7, claimed[0].MaxAttempts)
			})

			t.Run("GoneWithARollback", func(t *testing.T) {
				t.Parallel()
				db := dbtest.Open(t, dialect)
				refused := errors.New("refused")
				err := db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
					if _, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "rolled-back"}); err != nil {
						return err
					}
					return refused
				})
				require.ErrorIs(t, err, refused)
				require.Zero(t, countKind(t, db, "rolled-back"))
			})

			t.Run("SeenByTheirOwnTransaction", func(t *testing.T) {
				t.Parallel()
				db := dbtest.Open(t, dialect)
				require.NoError(t, db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
					if _, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "own"}); err != nil {
						return err
					}
					stats, err := r.JobStats(ctx, time.Now())
					if err != nil {
						return err
					}
					for _, s := range stats {
						if s.Kind == "own" && s.Ready == 1 {
							return nil
						}
					}
					return errors.New("the transaction does not see the job it enqueued")
				}))
			})

			t.Run("SharedBatchesKeepEveryJob", func(t *testing.T) {
				t.Parallel()
				db := openOneLeader(t, dialect)
				units := make([]func(ctx context.Context, r *store.Repos) error, 30)
				for i := range units {
					units[i] = enqueueUnit("batched")
				}
				for _, err := range lineUp(t, db, units) {
					require.NoError(t, err)
				}
				require.Equal(t, 30, countKind(t, db, "batched"))
			})
		})
	}
}
