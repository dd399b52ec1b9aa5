package cronexpr_test

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

func compile(expr, zone string) (cron.Plan, error) {
	var p failure.Problems
	pl := cron.Compile(cron.Spec{Frequency: cron.Custom, Timezone: zone, CustomSchedule: expr}, cronexpr.New(), &p)
	return pl, p.Err()
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCustomNext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr, zone, after, want string
	}{
		{"*/15 9-17 * * 1-5", "America/New_York", "2026-11-20T22:50:00Z", "2026-11-23T09:00:00-05:00"},
		{"0 12 * * *", "Europe/London", "2026-06-01T12:00:00Z", "2026-06-02T12:00:00+01:00"},
		{"30 8 1 * *", "Australia/Lord_Howe", "2026-06-15T00:00:00Z", "2026-07-01T08:30:00+10:30"},
		// Day of month OR day of week when both are restricted, as crontab.
		{"0 0 13 * 5", "Europe/London", "2026-11-01T00:00:00Z", "2026-11-06T00:00:00Z"},
		{"0 9 * * 7", "Europe/London", "2026-11-22T10:00:00Z", "2026-11-29T09:00:00Z"},
		// Fall-back overlap: each wall time runs once.
		{"30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T01:30:00-05:00"},
		{"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:45:00Z", "2026-04-06T01:45:00+10:30"},
		{"*/30 * * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-01T02:00:00-05:00"},
		{"*/30 * * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-01T01:30:00-04:00"},
		// Spring-forward gap: runs inside it happen once, at the jump.
		{"30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", "2026-03-08T03:00:00-04:00"},
		{"*/20 * * * *", "America/New_York", "2026-03-08T06:50:00Z", "2026-03-08T03:00:00-04:00"},
		{"*/20 * * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-08T03:20:00-04:00"},
		{"15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", "2026-10-04T02:30:00+11:00"},
	}
	for _, tc := range cases {
		t.Run(tc.expr+" "+tc.zone, func(t *testing.T) {
			t.Parallel()
			pl, err := compile(tc.expr, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pl.Next(utc(tc.after))
			if err != nil {
				t.Fatal(err)
			}
			if got.Format(time.RFC3339) != tc.want {
				t.Fatalf("Next(%s) = %s, want %s", tc.after, got.Format(time.RFC3339), tc.want)
			}
		})
	}
}

func TestCustomRefused(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"", "* * * *", "* * * * * *", "@daily", "61 * * * *", "0 0 30 2 *", "0 0 29 2 *",
		"TZ=UTC 0 0 * * *", "a b c d e", "0 25 * * *",
	} {
		if _, err := compile(expr, "Europe/London"); err == nil {
			t.Errorf("%q was accepted", expr)
		}
	}
}

// FuzzNext: whatever the expression and the moment, a schedule either is
// refused or gives a next run that is later than the moment and at most
// 366 days ahead (or says it has none).
func FuzzNext(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/15 9-17 * * 1-5", "0 0 29 2 *", "0 0 31 * *", "30 2 * * 0", "0 0 1 1 *", "5,10 1-3/2 */3 JAN-MAR MON"} {
		f.Add(s, "America/New_York", int64(1772953200))
		f.Add(s, "Australia/Lord_Howe", int64(1791000000))
	}
	f.Add("0 0 30 2 *", "Europe/London", int64(0))
	parser := cronexpr.New()
	f.Fuzz(func(t *testing.T, expr, zone string, unix int64) {
		if unix < -1<<40 || unix > 1<<40 {
			return
		}
		now := time.Unix(unix, 0)
		var p failure.Problems
		pl := cron.Compile(cron.Spec{Frequency: cron.Custom, Timezone: zone, CustomSchedule: expr}, parser, &p)
		if p.Err() != nil {
			return
		}
		next, err := pl.Next(now)
		if err != nil {
			return
		}
		if !next.After(now) {
			t.Fatalf("%q in %s: Next(%s) = %s is not later", expr, zone, now, next)
		}
		if next.Sub(now) > 366*24*time.Hour {
			t.Fatalf("%q in %s: Next(%s) = %s is more than 366 days ahead", expr, zone, now, next)
		}
	})
}
