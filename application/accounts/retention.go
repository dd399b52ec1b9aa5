package accounts

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// HistoryRetentionField names the setting in answers and errors.
const HistoryRetentionField = "history_retention_days"

// SetHistoryRetention gives an account its own history retention, days
// days (1 to account.MaxHistoryRetentionDays); nil gives it the server's
// again. NotFound when the account does not exist; Invalid, naming
// field, for a period out of bounds.
func (s *Service) SetHistoryRetention(ctx context.Context, id string, days *int, field ...any) (account.Account, error) {
	return s.setRetention(ctx, id, days, account.CheckHistoryRetentionDays, s.store.Repos().SetHistoryRetention, field...)
}

// MessageRetentionField names the message retention in answers and
// errors.
const MessageRetentionField = "message_retention_days"

// SetMessageRetention gives an account a message retention of days days
// (1 to account.MaxHistoryRetentionDays); nil turns it off. NotFound when
// the account does not exist; Invalid, naming field, for a period out of
// bounds.
func (s *Service) SetMessageRetention(ctx context.Context, id string, days *int, field ...any) (account.Account, error) {
	return s.setRetention(ctx, id, days, account.CheckMessageRetentionDays, s.store.Repos().SetMessageRetention, field...)
}

// setRetention checks days (nil: 0, the setting's default) and saves it.
func (s *Service) setRetention(ctx context.Context, id string, days *int, check func(int, ...any) error,
	save func(ctx context.Context, id string, days int, at time.Time) (account.Account, error), field ...any) (account.Account, error) {
	if !ident.Valid(ident.Account, id) {
		return account.Account{}, failure.NotFound("account")
	}
	own := 0
	if days != nil {
		if err := check(*days, field...); err != nil {
			return account.Account{}, err
		}
		own = *days
	}
	return save(ctx, id, own, s.now().UTC())
}

// HistoryRetention is how long a's history is kept: its own period or the
// server's.
func (s *Service) HistoryRetention(a account.Account) time.Duration {
	return a.HistoryRetention(s.historyRetention)
}

// AccountHistoryRetention reads how long the account id's history is
// kept. NotFound.
func (s *Service) AccountHistoryRetention(ctx context.Context, id string) (time.Duration, error) {
	a, err := s.Account(ctx, id)
	if err != nil {
		return 0, err
	}
	return s.HistoryRetention(a), nil
}
