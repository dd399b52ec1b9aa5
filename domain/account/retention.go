package account

import (
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// DefaultHistoryRetention is how long the server keeps an account's
// history unless its operator sets another period: 30 days. History is
// what the service records about an account's traffic besides the traffic
// itself: its events, its webhook deliveries with their attempts, its cron
// executions and the emails its sandbox mailbox keeps. It is deleted once
// older than the account's period, except what is still needed (a
// delivery not yet finished and its event, a cron execution still running
// or retrying).
const DefaultHistoryRetention = 30 * 24 * time.Hour

// Day is the unit of an account's own history retention.
const Day = 24 * time.Hour

// MaxHistoryRetentionDays bounds an account's own period: 100 years.
const MaxHistoryRetentionDays = 36500

// CheckHistoryRetentionDays refuses an account's own period of fewer
// than one day or more than MaxHistoryRetentionDays, naming field (whose
// last element, when a string, names it in the message too).
func CheckHistoryRetentionDays(days int, field ...any) error {
	return checkRetentionDays("history_retention_days", days, field...)
}

// CheckMessageRetentionDays refuses a message retention of fewer than one
// day or more than MaxHistoryRetentionDays, naming field as
// CheckHistoryRetentionDays does.
func CheckMessageRetentionDays(days int, field ...any) error {
	return checkRetentionDays("message_retention_days", days, field...)
}

func checkRetentionDays(name string, days int, field ...any) error {
	if len(field) > 0 {
		if s, ok := field[len(field)-1].(string); ok {
			name = s
		}
	}
	switch {
	case days < 1:
		return failure.Invalid(failure.Field("greater_than_equal",
			fmt.Sprintf("%s must be at least 1 (a day), got %d", name, days), field...))
	case days > MaxHistoryRetentionDays:
		return failure.Invalid(failure.Field("less_than_equal",
			fmt.Sprintf("%s must be at most %d (100 years), got %d", name, MaxHistoryRetentionDays, days), field...))
	}
	return nil
}

// CheckHistoryRetention refuses a server period that is not positive or
// is longer than MaxHistoryRetentionDays.
func CheckHistoryRetention(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("history retention must be positive (a duration such as 720h or a number of days such as 30d), got %s", d)
	case d > MaxHistoryRetentionDays*Day:
		return fmt.Errorf("history retention must be at most %d days (100 years), got %s", MaxHistoryRetentionDays, d)
	}
	return nil
}

// HistoryRetention is how long the account's history is kept: its own
// period, or serverDefault when it has none.
func (a Account) HistoryRetention(serverDefault time.Duration) time.Duration {
	if a.HistoryRetentionDays > 0 {
		return time.Duration(a.HistoryRetentionDays) * Day
	}
	return serverDefault
}

// MessageRetention is how long the account's messages and emails are
// kept; 0 when they are kept for good (no message retention, the
// default).
func (a Account) MessageRetention() time.Duration {
	return time.Duration(a.MessageRetentionDays) * Day
}

// HistoryCutoff is how long the account's history is kept when it also
// has a message retention: events and webhook deliveries carry messages'
// content, so they go at the shorter of the two periods.
func (a Account) HistoryCutoff(serverDefault time.Duration) time.Duration {
	h := a.HistoryRetention(serverDefault)
	if m := a.MessageRetention(); m > 0 && m < h {
		return m
	}
	return h
}
