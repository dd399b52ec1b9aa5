package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// periodValue is a flag holding a period given as a Go duration (720h,
// 90m), a number of days with a d (30d), or a bare number of days (30).
type periodValue struct{ target *time.Duration }

var _ pflag.Value = periodValue{}

// periodVar registers a period flag on f.
func periodVar(f *pflag.FlagSet, target *time.Duration, name, usage string) {
	f.Var(periodValue{target}, name, usage+" (a duration such as 720h, or days such as 30d)")
}

func (v periodValue) Set(s string) error {
	d, err := parsePeriod(s)
	if err != nil {
		return err
	}
	*v.target = d
	return nil
}

func (v periodValue) String() string {
	if v.target == nil {
		return ""
	}
	if d := *v.target; d%account.Day == 0 {
		return strconv.FormatInt(int64(d/account.Day), 10) + "d"
	}
	return v.target.String()
}

func (periodValue) Type() string { return "period" }

// parsePeriod reads a duration, Nd or N (days).
func parsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, err := strconv.ParseInt(strings.TrimSuffix(s, "d"), 10, 64); err == nil {
		if days > account.MaxHistoryRetentionDays || days < -account.MaxHistoryRetentionDays {
			return 0, fmt.Errorf("%q: at most %d days", s, account.MaxHistoryRetentionDays)
		}
		return time.Duration(days) * account.Day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a period: use a duration such as 720h, or days such as 30d", s)
	}
	return d, nil
}
