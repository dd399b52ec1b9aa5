package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

var _ appcron.LastExecutionsReader = CronStore{}

// LastExecutions reads the latest finished execution of each of the
// account's jobs among jobIDs in one statement: a finished execution with
// no later finished one of its job (cron_executions_slot serves both
// lookups).
func (r CronStore) LastExecutions(ctx context.Context, accountID string, jobIDs []string) (map[string]cron.Execution, error) {
	var rows []cronExecRow
	err := r.read.NewRaw("SELECT "+cronExecColumns+" FROM cron_executions AS e"+
		" WHERE e.account_id = ? AND e.job_id IN (?) AND e.status IN (?)"+
		" AND NOT EXISTS (SELECT 1 FROM cron_executions AS x WHERE x.job_id = e.job_id AND x.status IN (?)"+
		" AND (x.slot > e.slot OR (x.slot = e.slot AND x.id > e.id)))",
		accountID, bun.List(jobIDs), bun.List(finished), bun.List(finished)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read last executions: %w", err)
	}
	out := make(map[string]cron.Execution, len(rows))
	for _, row := range rows {
		out[row.JobID] = row.domain()
	}
	return out, nil
}

// RunCounts counts the finished executions of each of the account's jobs
// among jobIDs in one statement, grouped by job.
func (r CronStore) RunCounts(ctx context.Context, accountID string, jobIDs []string) (map[string]appcron.RunCount, error) {
	out := make(map[string]appcron.RunCount, len(jobIDs))
	if len(jobIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		JobID     string `bun:"job_id"`
		Succeeded int    `bun:"succeeded"`
		Failed    int    `bun:"failed"`
		Last      int64  `bun:"last"`
	}
	err := r.read.NewRaw("SELECT job_id, SUM(CASE WHEN status = 'success' THEN 1 ELSE 0 END) AS succeeded,"+
		" SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed, MAX(started_at) AS last"+
		" FROM cron_executions WHERE account_id = ? AND job_id IN (?) AND status IN (?) GROUP BY job_id",
		accountID, bun.List(jobIDs), bun.List(finished)).Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("count cron runs: %w", err)
	}
	for _, row := range rows {
		out[row.JobID] = appcron.RunCount{Succeeded: row.Succeeded, Failed: row.Failed, LastStartedAt: fromMicros(row.Last)}
	}
	return out, nil
}
