package cron

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// LastExecutionsReader is the batched read of the latest finished
// executions, which a store may offer beside Repos.
type LastExecutionsReader interface {
	// LastExecutions reads, in one statement, the latest finished
	// execution of each of the account's jobs among jobIDs; jobs without
	// one, and other accounts' jobs, are absent.
	LastExecutions(ctx context.Context, accountID string, jobIDs []string) (map[string]cron.Execution, error)
}

// LastExecutions returns the latest finished execution of each of the
// account's jobs among jobIDs, for listings (one read for the page when the
// store offers the batched read, one per job otherwise).
func (s *Service) LastExecutions(ctx context.Context, accountID string, jobIDs []string) (map[string]cron.Execution, error) {
	ids := make([]string, 0, len(jobIDs))
	for _, id := range jobIDs {
		if ident.Valid(ident.CronJob, id) {
			ids = append(ids, id)
		}
	}
	out := map[string]cron.Execution{}
	if len(ids) == 0 {
		return out, nil
	}
	r := s.store.Repos()
	if b, ok := r.(LastExecutionsReader); ok {
		return b.LastExecutions(ctx, accountID, ids)
	}
	for _, id := range ids {
		if _, err := r.Job(ctx, accountID, id); err != nil {
			continue
		}
		e, ok, err := r.LastExecution(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out[id] = e
		}
	}
	return out, nil
}
