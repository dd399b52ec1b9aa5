package cron_test

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

func intp(v int) *int { return &v }

func plan(t *testing.T, s cron.Spec) cron.Plan {
	t.Helper()
	var p failure.Problems
	pl := cron.Compile(s, nil, &p)
	if err := p.Err(); err != nil {
		t.Fatalf("compile %+v: %v", s, err)
	}
	return pl
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestNextAcrossZones is the table of the interface's rules: DST gaps run
// at the instant the clocks jump, DST overlaps run once (at the first
// occurrence), months shorter than day_of_month run on their last day.
func TestNextAcrossZones(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spec  cron.Spec
		after string
		want  string // RFC 3339 with the zone's offset
	}{
		// America/New_York: spring forward 2026-03-08 02:00 EST → 03:00 EDT,
		// fall back 2026-11-01 02:00 EDT → 01:00 EST.
		{"NY plain day", cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "America/New_York"}, "2026-01-10T15:00:00Z", "2026-01-11T09:00:00-05:00"},
		{"NY same day later", cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "America/New_York"}, "2026-01-10T13:59:00Z", "2026-01-10T09:00:00-05:00"},
		{"NY exactly at the slot moves on", cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "America/New_York"}, "2026-01-10T14:00:00Z", "2026-01-11T09:00:00-05:00"},
		{"NY gap runs at the jump", cron.Spec{Frequency: cron.Daily, Time: "02:30", Timezone: "America/New_York"}, "2026-03-07T17:00:00Z", "2026-03-08T03:00:00-04:00"},
		{"NY day after the gap", cron.Spec{Frequency: cron.Daily, Time: "02:30", Timezone: "America/New_York"}, "2026-03-08T07:00:00Z", "2026-03-09T02:30:00-04:00"},
		{"NY gap start 02:00", cron.Spec{Frequency: cron.Daily, Time: "02:00", Timezone: "America/New_York"}, "2026-03-07T17:00:00Z", "2026-03-08T03:00:00-04:00"},
		{"NY 03:00 on the gap day", cron.Spec{Frequency: cron.Daily, Time: "03:00", Timezone: "America/New_York"}, "2026-03-07T17:00:00Z", "2026-03-08T03:00:00-04:00"},
		{"NY overlap first occurrence", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "America/New_York"}, "2026-10-31T16:00:00Z", "2026-11-01T01:30:00-04:00"},
		{"NY overlap runs once", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "America/New_York"}, "2026-11-01T05:30:00Z", "2026-11-02T01:30:00-05:00"},
		{"NY weekly Sunday", cron.Spec{Frequency: cron.Weekly, Time: "09:00", Timezone: "America/New_York", DayOfWeek: intp(0)}, "2026-11-18T12:00:00Z", "2026-11-22T09:00:00-05:00"},
		{"NY weekly Sunday gap", cron.Spec{Frequency: cron.Weekly, Time: "02:15", Timezone: "America/New_York", DayOfWeek: intp(0)}, "2026-03-02T12:00:00Z", "2026-03-08T03:00:00-04:00"},
		{"NY monthly 31 in February", cron.Spec{Frequency: cron.Monthly, Time: "10:00", Timezone: "America/New_York", DayOfMonth: intp(31)}, "2026-02-01T12:00:00Z", "2026-02-28T10:00:00-05:00"},
		{"NY monthly 31 in April", cron.Spec{Frequency: cron.Monthly, Time: "10:00", Timezone: "America/New_York", DayOfMonth: intp(31)}, "2026-04-01T00:00:00Z", "2026-04-30T10:00:00-04:00"},
		{"NY monthly 30 in leap February", cron.Spec{Frequency: cron.Monthly, Time: "10:00", Timezone: "America/New_York", DayOfMonth: intp(30)}, "2028-02-01T12:00:00Z", "2028-02-29T10:00:00-05:00"},
		{"NY monthly 31 in January", cron.Spec{Frequency: cron.Monthly, Time: "10:00", Timezone: "America/New_York", DayOfMonth: intp(31)}, "2026-01-05T00:00:00Z", "2026-01-31T10:00:00-05:00"},

		// Europe/London: 2026-03-29 01:00 GMT → 02:00 BST; 2026-10-25
		// 02:00 BST → 01:00 GMT.
		{"London gap", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}, "2026-03-28T12:00:00Z", "2026-03-29T02:00:00+01:00"},
		{"London after gap", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}, "2026-03-29T01:00:00Z", "2026-03-30T01:30:00+01:00"},
		{"London overlap first", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}, "2026-10-24T12:00:00Z", "2026-10-25T01:30:00+01:00"},
		{"London overlap once", cron.Spec{Frequency: cron.Daily, Time: "01:30", Timezone: "Europe/London"}, "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		{"London midnight", cron.Spec{Frequency: cron.Daily, Time: "00:00", Timezone: "Europe/London"}, "2026-06-30T23:00:00Z", "2026-07-02T00:00:00+01:00"},
		{"London monthly 29 in February", cron.Spec{Frequency: cron.Monthly, Time: "00:00", Timezone: "Europe/London", DayOfMonth: intp(29)}, "2027-02-01T00:00:00Z", "2027-02-28T00:00:00Z"},

		// Australia/Lord_Howe shifts by 30 minutes: 2026-10-04 02:00 →
		// 02:30 (+10:30 → +11); 2026-04-05 02:00 → 01:30 (+11 → +10:30).
		{"Lord Howe gap", cron.Spec{Frequency: cron.Daily, Time: "02:15", Timezone: "Australia/Lord_Howe"}, "2026-10-03T00:00:00Z", "2026-10-04T02:30:00+11:00"},
		{"Lord Howe after gap", cron.Spec{Frequency: cron.Daily, Time: "02:15", Timezone: "Australia/Lord_Howe"}, "2026-10-03T15:30:00Z", "2026-10-05T02:15:00+11:00"},
		{"Lord Howe edge of gap", cron.Spec{Frequency: cron.Daily, Time: "02:30", Timezone: "Australia/Lord_Howe"}, "2026-10-03T00:00:00Z", "2026-10-04T02:30:00+11:00"},
		{"Lord Howe overlap first", cron.Spec{Frequency: cron.Daily, Time: "01:45", Timezone: "Australia/Lord_Howe"}, "2026-04-04T00:00:00Z", "2026-04-05T01:45:00+11:00"},
		{"Lord Howe overlap once", cron.Spec{Frequency: cron.Daily, Time: "01:45", Timezone: "Australia/Lord_Howe"}, "2026-04-04T14:45:00Z", "2026-04-06T01:45:00+10:30"},
		{"Lord Howe monthly 31 in June", cron.Spec{Frequency: cron.Monthly, Time: "12:00", Timezone: "Australia/Lord_Howe", DayOfMonth: intp(31)}, "2026-06-01T00:00:00Z", "2026-06-30T12:00:00+10:30"},
		{"Lord Howe weekly Saturday", cron.Spec{Frequency: cron.Weekly, Time: "23:59", Timezone: "Australia/Lord_Howe", DayOfWeek: intp(6)}, "2026-11-22T00:00:00Z", "2026-11-28T23:59:00+11:00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := plan(t, tc.spec).Next(utc(tc.after))
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if got.Format(time.RFC3339) != tc.want {
				t.Fatalf("Next(%s) = %s, want %s", tc.after, got.Format(time.RFC3339), tc.want)
			}
		})
	}
}

// TestTimeTravel walks each frequency through two years, one run at a
// time, as the scheduler does, and checks every run: strictly later than
// the one before, on the right day, at the right wall time (or the jump
// of a DST gap), and never twice on one day.
func TestTimeTravel(t *testing.T) {
	t.Parallel()
	zones := []string{"America/New_York", "Europe/London", "Australia/Lord_Howe"}
	for _, zone := range zones {
		for _, spec := range []cron.Spec{
			{Frequency: cron.Daily, Time: "02:30", Timezone: zone},
			{Frequency: cron.Daily, Time: "01:45", Timezone: zone},
			{Frequency: cron.Weekly, Time: "02:10", Timezone: zone, DayOfWeek: intp(0)},
			{Frequency: cron.Monthly, Time: "01:30", Timezone: zone, DayOfMonth: intp(31)},
		} {
			t.Run(zone+"/"+string(spec.Frequency)+"/"+spec.Time, func(t *testing.T) {
				t.Parallel()
				pl := plan(t, spec)
				loc, err := cron.LoadZone(zone)
				if err != nil {
					t.Fatal(err)
				}
				h, m, _ := cron.ParseClock(spec.Time)
				now := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
				end := now.AddDate(2, 0, 0)
				days := map[string]bool{}
				runs := 0
				for {
					next, err := pl.Next(now)
					if err != nil {
						t.Fatalf("Next(%s): %v", now, err)
					}
					if !next.After(now) {
						t.Fatalf("Next(%s) = %s is not later", now, next)
					}
					if next.After(end) {
						break
					}
					day := next.Format("2006-01-02")
					if days[day] {
						t.Fatalf("two runs on %s", day)
					}
					days[day] = true
					if next.Hour() != h || next.Minute() != m {
						// Only a DST gap may move the run, and only to the jump.
						start, _ := next.ZoneBounds()
						if !start.Equal(next) {
							t.Fatalf("run at %s is not at %s and not at a DST jump", next, spec.Time)
						}
					}
					switch spec.Frequency {
					case cron.Weekly:
						if next.Weekday() != time.Sunday {
							t.Fatalf("weekly run on %s", next.Weekday())
						}
					case cron.Monthly:
						if next.Day() != cron.DaysIn(next.Year(), next.Month()) {
							t.Fatalf("monthly 31 run on %s, not the month's last day", day)
						}
					}
					runs++
					now = next
				}
				want := map[cron.Frequency][2]int{cron.Daily: {730, 731}, cron.Weekly: {104, 105}, cron.Monthly: {24, 24}}[spec.Frequency]
				if runs < want[0] || runs > want[1] {
					t.Fatalf("%d runs in two years, want %d-%d", runs, want[0], want[1])
				}
			})
		}
	}
}

// TestNextIntervals: every Every-th day, week (on each of its days) or
// month from the Start date's, and hourly runs every Every hours of
// elapsed time from Time on Start, across a daylight-saving change.
func TestNextIntervals(t *testing.T) {
	t.Parallel()
	ny := "America/New_York"
	cases := []struct {
		name  string
		spec  cron.Spec
		after string
		want  string
	}{
		{"every 2 days, the start day", cron.Spec{Frequency: cron.Daily, Every: 2, Start: "2026-03-01", Time: "09:00", Timezone: ny}, "2026-03-01T12:00:00Z", "2026-03-01T09:00:00-05:00"},
		{"every 2 days, skips one", cron.Spec{Frequency: cron.Daily, Every: 2, Start: "2026-03-01", Time: "09:00", Timezone: ny}, "2026-03-01T15:00:00Z", "2026-03-03T09:00:00-05:00"},
		{"every 2 days, over the DST change", cron.Spec{Frequency: cron.Daily, Every: 2, Start: "2026-03-01", Time: "09:00", Timezone: ny}, "2026-03-07T15:00:00Z", "2026-03-09T09:00:00-04:00"},
		{"weekly on three days, the start week", cron.Spec{Frequency: cron.Weekly, Every: 2, Start: "2026-03-04", DaysOfWeek: []int{1, 3, 5}, Time: "17:00", Timezone: ny}, "2026-03-04T23:00:00Z", "2026-03-06T17:00:00-05:00"},
		{"weekly on three days, the week off", cron.Spec{Frequency: cron.Weekly, Every: 2, Start: "2026-03-04", DaysOfWeek: []int{1, 3, 5}, Time: "17:00", Timezone: ny}, "2026-03-06T23:00:00Z", "2026-03-16T17:00:00-04:00"},
		{"weekly every week on two days", cron.Spec{Frequency: cron.Weekly, Start: "2026-03-04", DaysOfWeek: []int{2, 4}, Time: "08:00", Timezone: "UTC"}, "2026-03-05T09:00:00Z", "2026-03-10T08:00:00Z"},
		{"every 3 months on the 1st, from mid-month", cron.Spec{Frequency: cron.Monthly, Every: 3, Start: "2026-01-15", DayOfMonth: intp(1), Time: "10:00", Timezone: ny}, "2026-01-15T12:00:00Z", "2026-04-01T10:00:00-04:00"},
		{"every 3 months, the one after", cron.Spec{Frequency: cron.Monthly, Every: 3, Start: "2026-01-15", DayOfMonth: intp(1), Time: "10:00", Timezone: ny}, "2026-04-01T15:00:00Z", "2026-07-01T10:00:00-04:00"},
		{"hourly, the top of the hour", cron.Spec{Frequency: cron.Hourly, Every: 1, Start: "2026-01-10", Time: "00:00", Timezone: "UTC"}, "2026-01-10T15:20:00Z", "2026-01-10T16:00:00Z"},
		{"hourly at half past", cron.Spec{Frequency: cron.Hourly, Start: "2026-01-10", Time: "00:30", Timezone: ny}, "2026-01-10T15:30:00Z", "2026-01-10T11:30:00-05:00"},
		{"every 5 hours", cron.Spec{Frequency: cron.Hourly, Every: 5, Start: "2026-03-07", Time: "00:30", Timezone: ny}, "2026-03-07T06:00:00Z", "2026-03-07T05:30:00-05:00"},
		{"every 5 hours, over the spring-forward change", cron.Spec{Frequency: cron.Hourly, Every: 5, Start: "2026-03-07", Time: "00:30", Timezone: ny}, "2026-03-08T06:31:00Z", "2026-03-08T07:30:00-04:00"},
		{"hourly before its start", cron.Spec{Frequency: cron.Hourly, Every: 2, Start: "2026-03-07", Time: "06:15", Timezone: "UTC"}, "2026-03-01T00:00:00Z", "2026-03-07T06:15:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := plan(t, tc.spec).Next(utc(tc.after))
			if err != nil {
				t.Fatal(err)
			}
			if got.Format(time.RFC3339) != tc.want {
				t.Fatalf("Next(%s) = %s, want %s", tc.after, got.Format(time.RFC3339), tc.want)
			}
		})
	}
}

// TestScheduleEnds: no run after EndAt, and none once the job has made
// MaxRuns scheduled runs; both are ErrEnded, not a broken schedule.
func TestScheduleEnds(t *testing.T) {
	t.Parallel()
	end := utc("2026-03-02T12:00:00Z")
	p := plan(t, cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "America/New_York", EndAt: &end})
	if got, err := p.Next(utc("2026-03-01T12:00:00Z")); err != nil || got.Format(time.RFC3339) != "2026-03-01T09:00:00-05:00" {
		t.Fatalf("before the end: %v, %v", got, err)
	}
	if _, err := p.Next(utc("2026-03-01T15:00:00Z")); err != cron.ErrEnded {
		t.Fatalf("the next run is after the end: want ErrEnded, got %v", err)
	}
	p = plan(t, cron.Spec{Frequency: cron.Daily, Time: "09:00", Timezone: "UTC", MaxRuns: 2})
	if _, err := p.NextRun(utc("2026-03-01T12:00:00Z"), 1); err != nil {
		t.Fatalf("one run made of two: %v", err)
	}
	if _, err := p.NextRun(utc("2026-03-01T12:00:00Z"), 2); err != cron.ErrEnded {
		t.Fatalf("two runs made of two: want ErrEnded, got %v", err)
	}
}
