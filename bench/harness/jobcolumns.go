package harness

import (
	"context"
	"fmt"
)

// JobsNameAccounts reports whether the database's jobs table has the
// account and endpoint columns of fair background work. Scenarios that
// seed jobs directly fill them when it has, so that the runner bounds the
// seeded jobs as it bounds the ones the service enqueues; a build from
// before them (compared with -against) gets jobs without them.
func JobsNameAccounts(ctx context.Context, db *SQL) (bool, error) {
	has, err := db.String(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'jobs' AND column_name = 'account_id')`)
	if err != nil {
		return false, fmt.Errorf("read the jobs table: %w", err)
	}
	return has == "t", nil
}
