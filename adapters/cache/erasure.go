package cache

import (
	"context"
	"slices"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Erasure decorates the erasure use case's store: once an erasure has
// committed, this process forgets the sendable threads it deleted, so
// that a send to the erased person finds no thread and starts a new one.
// Another replica forgets them within the TTL (as a number disabled
// elsewhere); a send there in that window fails on the missing thread
// instead of recreating it.
func (c *Caches) Erasure(next apperasure.Store) apperasure.Store {
	return erasureStore{Store: next, c: c}
}

type erasureStore struct {
	apperasure.Store
	c *Caches
}

func (s erasureStore) Decide(ctx context.Context, decide func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error)) error {
	var erased []string
	err := s.Store.Decide(ctx, func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error) {
		b, err := decide(ctx, tx)
		erased = nil
		for _, e := range b.Erasures {
			erased = append(erased, e.Target.ThreadIDs...)
		}
		return b, err
	})
	if len(erased) > 0 { // also when the outcome is unknown
		s.c.threads.forgetValues(func(t messaging.Thread) bool { return slices.Contains(erased, t.ID) })
	}
	return err
}
