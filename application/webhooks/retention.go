package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// HistoryRetention says how long an account's history (its events and
// deliveries among it) is kept before the pruner deletes it.
type HistoryRetention interface {
	// AccountHistoryRetention is the account's period. NotFound.
	AccountHistoryRetention(ctx context.Context, accountID string) (time.Duration, error)
}

// pruned tells whether the id (of prefix), which the account's log does
// not hold, was made longer ago than the account's history retention:
// the pruner deleted it, or would have. It says so from the id and the
// account's own period alone, so another account's ids learn nothing.
func (s *Service) pruned(ctx context.Context, accountID, prefix, id string) (time.Duration, bool) {
	made, ok := ident.MadeAt(prefix, id)
	if !ok || s.retention == nil {
		return 0, false
	}
	period, err := s.retention.AccountHistoryRetention(ctx, accountID)
	if err != nil || !made.Before(s.now().Add(-period)) {
		return 0, false
	}
	return period, true
}

// days writes a period for people: in days when it is whole days.
func days(d time.Duration) string {
	if d%account.Day == 0 {
		return fmt.Sprintf("%d days", d/account.Day)
	}
	return d.String()
}

// deliveryPruned is the answer about a delivery older than the account's
// history retention.
func deliveryPruned(id string, period time.Duration) error {
	return &failure.Error{Kind: failure.KindNotFound, Code: "delivery_pruned",
		Message: fmt.Sprintf("delivery %s is older than this account's history retention (%s) and was deleted with its attempts", id, days(period))}
}

// cursorPruned is the answer to a polling cursor older than the account's
// history retention.
func cursorPruned(period time.Duration) error {
	return failure.Invalid(failure.FieldError{In: "query", Path: []any{"after"}, Type: "cursor_pruned",
		Message: fmt.Sprintf("after names an event older than this account's history retention (%s), which was deleted with the events around it; ask without after to read from the oldest event kept", days(period))})
}
