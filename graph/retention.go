package graph

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// HistoryRetention reads and sets how long accounts' history is kept;
// *accounts.Service implements it. Without one, historyRetentionDays and
// setHistoryRetention answer not_implemented.
type HistoryRetention interface {
	// SetHistoryRetention sets the account's own period in days, nil for
	// the server's. Invalid, on field, out of bounds; NotFound.
	SetHistoryRetention(ctx context.Context, accountID string, days *int, field ...any) (account.Account, error)
	// SetMessageRetention sets the account's message retention in days,
	// nil for none. Invalid, on field, out of bounds; NotFound.
	SetMessageRetention(ctx context.Context, accountID string, days *int, field ...any) (account.Account, error)
	// HistoryRetention is how long a's history is kept.
	HistoryRetention(a account.Account) time.Duration
}

var _ HistoryRetention = (*accounts.Service)(nil)

var errNoRetention = &failure.Error{Kind: failure.KindNotImplemented, Code: "retention_unavailable", Message: "history retention is not configured"}
