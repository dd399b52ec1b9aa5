package account

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

func TestHistoryRetentionBounds(t *testing.T) {
	t.Parallel()
	for _, days := range []int{0, -1, -30, MaxHistoryRetentionDays + 1} {
		err := CheckHistoryRetentionDays(days, "days")
		fe := failure.As(err)
		if err == nil || fe.Kind != failure.KindInvalid || len(fe.Fields) != 1 || fe.Fields[0].Path[0] != "days" {
			t.Errorf("%d days: got %v, want a validation error on days", days, err)
		}
	}
	for _, days := range []int{1, 30, 3650, MaxHistoryRetentionDays} {
		if err := CheckHistoryRetentionDays(days); err != nil {
			t.Errorf("%d days refused: %v", days, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Hour, -30 * Day, (MaxHistoryRetentionDays + 1) * Day} {
		if CheckHistoryRetention(d) == nil {
			t.Errorf("a server period of %s was accepted", d)
		}
	}
	for _, d := range []time.Duration{time.Hour, 30 * Day, 3650 * Day} {
		if err := CheckHistoryRetention(d); err != nil {
			t.Errorf("a server period of %s was refused: %v", d, err)
		}
	}
}

func TestHistoryRetentionIsTheAccountsOrTheServers(t *testing.T) {
	t.Parallel()
	if got := (Account{}).HistoryRetention(45 * Day); got != 45*Day {
		t.Errorf("an account without its own period follows the server's: got %s", got)
	}
	if got := (Account{HistoryRetentionDays: 3650}).HistoryRetention(45 * Day); got != 3650*Day {
		t.Errorf("an account's own period wins: got %s", got)
	}
}
