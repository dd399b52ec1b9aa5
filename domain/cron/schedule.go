package cron

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Schedule is a parsed custom expression: Next returns the first matching
// instant strictly after t, read in t's location, or the zero time when
// there is none.
type Schedule interface {
	Next(t time.Time) time.Time
}

// Parser reads 5-field cron expressions (minute hour day-of-month month
// day-of-week). The domain decides what an expression means around DST
// changes and how far ahead it may reach; an adapter does the parsing.
type Parser interface {
	Parse(expr string) (Schedule, error)
}

// Plan is a checked Spec, ready to say when a job runs.
type Plan struct {
	spec   Spec
	loc    *time.Location
	hour   int
	minute int
	custom Schedule
	// start is Spec.Start as a date at noon UTC (the zero time when the
	// Spec has none), the origin of Every.
	start time.Time
}

var locations sync.Map // name → *time.Location

// LoadZone loads an IANA zone of the form Area/City (or UTC), cached.
func LoadZone(name string) (*time.Location, error) {
	if v, ok := locations.Load(name); ok {
		return v.(*time.Location), nil
	}
	if name != "UTC" && (!strings.Contains(name, "/") || strings.HasPrefix(name, "/") || strings.Contains(name, "..")) {
		return nil, fmt.Errorf("timezone must be an IANA name of the form Area/City, e.g. Europe/London")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("timezone %q is not a known IANA time zone", name)
	}
	locations.Store(name, loc)
	return loc, nil
}

// ParseClock reads "HH:MM" (24-hour).
func ParseClock(s string) (hour, minute int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, 0, false
		}
	}
	hour = int(s[0]-'0')*10 + int(s[1]-'0')
	minute = int(s[3]-'0')*10 + int(s[4]-'0')
	return hour, minute, hour < 24 && minute < 60
}

// probeYears are the starts of the years a custom expression is tried
// from: together they cover two leap cycles, so an expression that only
// matches on 29 February (or never) is refused.
var probeYears = []int{2024, 2025, 2026, 2027, 2028, 2029, 2030, 2031}

// CheckCustom parses a custom expression and checks that it runs at least
// once in every 366 days.
func CheckCustom(expr string, loc *time.Location, parser Parser) (Schedule, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("custom_schedule must be a 5-field cron expression (minute hour day-of-month month day-of-week), e.g. \"*/15 9-17 * * 1-5\"")
	}
	if strings.HasPrefix(fields[0], "@") || strings.Contains(expr, "=") {
		return nil, fmt.Errorf("custom_schedule must be a 5-field cron expression without descriptors or time zones; give the zone in timezone")
	}
	sched, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, fmt.Errorf("custom_schedule is not a valid cron expression: %v", err)
	}
	plan := Plan{loc: loc, custom: sched, spec: Spec{Frequency: Custom}}
	for _, y := range probeYears {
		if _, err := plan.Next(time.Date(y, 1, 1, 0, 0, 0, 0, loc)); err != nil {
			return nil, fmt.Errorf("custom_schedule must run at least once a year")
		}
	}
	return sched, nil
}

// Next returns the first run strictly after after, in the plan's zone.
// Daily, weekly and monthly runs happen at Time on their days: a Time that
// does not exist that day (skipped by a spring-forward change) runs at the
// next valid instant, the moment the clocks jump; a Time that happens
// twice (a fall-back change) runs once, at its first occurrence. Monthly
// jobs run on the last day of months shorter than DayOfMonth. Custom
// expressions follow the same rules for each wall time they match: every
// wall time runs once, so the hour a fall-back change repeats has no runs
// the second time round.
//
// Every spaces the runs (every Every-th day, week or month from Start's;
// hourly runs every Every hours from Time on Start); DaysOfWeek adds days
// to weekly runs. ErrEnded when the next run would be after EndAt.
func (p Plan) Next(after time.Time) (time.Time, error) {
	t, err := p.next(after)
	if err == nil && p.spec.EndAt != nil && t.After(*p.spec.EndAt) {
		return time.Time{}, ErrEnded
	}
	return t, err
}

// NextRun is Next for a job that has made runs scheduled runs: ErrEnded
// once they reach the Spec's MaxRuns.
func (p Plan) NextRun(after time.Time, runs int) (time.Time, error) {
	if p.spec.MaxRuns > 0 && runs >= p.spec.MaxRuns {
		return time.Time{}, ErrEnded
	}
	return p.Next(after)
}

func (p Plan) next(after time.Time) (time.Time, error) {
	switch p.spec.Frequency {
	case Custom:
		return p.nextCustom(after)
	case Hourly:
		return p.nextHourly(after)
	}
	local := after.In(p.loc)
	y, m, d := local.Date()
	for i := 0; i <= 400; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC)
		if !p.matches(day) {
			continue
		}
		t := resolve(day.Year(), day.Month(), day.Day(), p.hour, p.minute, p.loc)
		if t.After(after) {
			if t.Sub(after) > Horizon {
				return time.Time{}, ErrNoNextRun
			}
			return t.In(p.loc), nil
		}
	}
	return time.Time{}, ErrNoNextRun
}

// matches reports whether day (a date at noon UTC) has a run.
func (p Plan) matches(day time.Time) bool {
	every := p.every()
	if every > 1 && day.Before(p.start) {
		return false
	}
	switch p.spec.Frequency {
	case Weekly:
		wd := int(day.Weekday())
		if (p.spec.DayOfWeek == nil || *p.spec.DayOfWeek != wd) && !slices.Contains(p.spec.DaysOfWeek, wd) {
			return false
		}
		// Weeks run Sunday to Saturday: whole weeks between the Sundays.
		return every == 1 || daysBetween(p.start.AddDate(0, 0, -int(p.start.Weekday())), day.AddDate(0, 0, -wd))/7%every == 0
	case Monthly:
		if p.spec.DayOfMonth == nil || day.Day() != min(*p.spec.DayOfMonth, DaysIn(day.Year(), day.Month())) {
			return false
		}
		return every == 1 || ((day.Year()-p.start.Year())*12+int(day.Month())-int(p.start.Month()))%every == 0
	}
	return every == 1 || daysBetween(p.start, day)%every == 0
}

// every is the Spec's interval, at least 1.
func (p Plan) every() int { return max(p.spec.Every, 1) }

// daysBetween counts the days from a to b, dates at noon UTC.
func daysBetween(a, b time.Time) int {
	return int(b.Sub(a).Round(24*time.Hour) / (24 * time.Hour))
}

// nextHourly is the first run after after: runs are every Every hours of
// elapsed time from Time on the Start date, so a daylight-saving change
// moves neither their spacing nor, in whole-hour zones, their minute.
func (p Plan) nextHourly(after time.Time) (time.Time, error) {
	first := resolve(p.start.Year(), p.start.Month(), p.start.Day(), p.hour, p.minute, p.loc)
	if after.Before(first) {
		if first.Sub(after) > Horizon {
			return time.Time{}, ErrNoNextRun
		}
		return first.In(p.loc), nil
	}
	step := time.Duration(p.every()) * time.Hour
	n := after.Sub(first)/step + 1
	return first.Add(n * step).In(p.loc), nil
}

// DaysIn is the number of days of a month.
func DaysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 12, 0, 0, 0, time.UTC).Day()
}

// nextCustom evaluates the expression on wall-clock time (as if the zone
// had no DST) and turns each matching wall time into an instant with the
// same rules as the fixed frequencies, so that a custom job and a daily
// job at the same time behave alike across DST changes.
func (p Plan) nextCustom(after time.Time) (time.Time, error) {
	local := after.In(p.loc)
	wall := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), local.Nanosecond(), time.UTC)
	for range 2000 {
		wall = p.custom.Next(wall)
		if wall.IsZero() {
			return time.Time{}, ErrNoNextRun
		}
		t := resolve(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), p.loc)
		if !t.After(after) {
			continue
		}
		if t.Sub(after) > Horizon {
			return time.Time{}, ErrNoNextRun
		}
		return t.In(p.loc), nil
	}
	return time.Time{}, ErrNoNextRun
}

// resolve turns a wall-clock time on a date into an instant in loc: the
// earliest instant showing that wall time, or, when the time is skipped,
// the instant the clocks jump past it.
func resolve(y int, m time.Month, d, hour, minute int, loc *time.Location) time.Time {
	wall := time.Date(y, m, d, hour, minute, 0, 0, time.UTC)
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if sameWall(t.In(loc), wall) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: read with the offset before the change, the instant lies
	// after the jump; the zone then in effect began at the jump.
	t := wall.Add(-time.Duration(before) * time.Second).In(loc)
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	return start
}

func sameWall(t, wall time.Time) bool {
	y, m, d := t.Date()
	wy, wm, wd := wall.Date()
	return y == wy && m == wm && d == wd && t.Hour() == wall.Hour() && t.Minute() == wall.Minute()
}
