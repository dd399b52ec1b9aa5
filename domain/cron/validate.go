package cron

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Compile checks a Spec field by field and returns its Plan. Every broken
// rule is added to p; the Plan is only usable when none was.
func Compile(s Spec, parser Parser, p *failure.Problems) Plan {
	plan := Plan{spec: s}
	before := len(*p)
	switch s.Frequency {
	case "":
		p.Add("missing", "Field required", "frequency")
	case Daily, Weekly, Monthly, Custom, Hourly:
	default:
		p.Add("enum", FrequencyMessage, "frequency")
	}
	plan.start = compileStart(s, p)
	compileInterval(s, p)
	if s.Timezone == "" {
		p.Add("missing", "Field required", "timezone")
	} else if loc, err := LoadZone(s.Timezone); err != nil {
		p.Add("value_error", err.Error(), "timezone")
	} else {
		plan.loc = loc
	}
	if s.Frequency == Custom {
		if s.Time != "" {
			if _, _, ok := ParseClock(s.Time); !ok {
				p.Add("value_error", "time must be a 24-hour time HH:MM, e.g. 09:30", "time")
			}
		}
	} else if s.Time == "" {
		p.Add("missing", "Field required", "time")
	} else if h, m, ok := ParseClock(s.Time); !ok {
		p.Add("value_error", "time must be a 24-hour time HH:MM, e.g. 09:30", "time")
	} else {
		plan.hour, plan.minute = h, m
	}
	switch {
	case s.Frequency == Weekly && s.DayOfWeek == nil && len(s.DaysOfWeek) == 0:
		p.Add("missing", "day_of_week is required for weekly jobs (0-6, 0 is Sunday)", "day_of_week")
	case s.DayOfWeek != nil && (*s.DayOfWeek < 0 || *s.DayOfWeek > 6):
		p.Add("value_error", "day_of_week must be between 0 and 6 (0 is Sunday)", "day_of_week")
	case s.DayOfWeek != nil && s.Frequency != Weekly && isFrequency(s.Frequency):
		p.Add("value_error", "day_of_week is only used by weekly jobs", "day_of_week")
	}
	switch {
	case s.Frequency == Monthly && s.DayOfMonth == nil:
		p.Add("missing", "day_of_month is required for monthly jobs (1-31)", "day_of_month")
	case s.DayOfMonth != nil && (*s.DayOfMonth < 1 || *s.DayOfMonth > 31):
		p.Add("value_error", "day_of_month must be between 1 and 31", "day_of_month")
	case s.DayOfMonth != nil && s.Frequency != Monthly && isFrequency(s.Frequency):
		p.Add("value_error", "day_of_month is only used by monthly jobs", "day_of_month")
	}
	switch {
	case s.Frequency == Custom && strings.TrimSpace(s.CustomSchedule) == "":
		p.Add("missing", "custom_schedule is required for custom jobs", "custom_schedule")
	case s.Frequency == Custom && plan.loc != nil:
		sched, err := CheckCustom(s.CustomSchedule, plan.loc, parser)
		if err != nil {
			p.Add("value_error", err.Error(), "custom_schedule")
		}
		plan.custom = sched
	case s.CustomSchedule != "" && s.Frequency != Custom && isFrequency(s.Frequency):
		p.Add("value_error", "custom_schedule is only used by custom jobs", "custom_schedule")
	}
	if len(*p) > before {
		return Plan{}
	}
	return plan
}

func isFrequency(f Frequency) bool {
	return f == Daily || f == Weekly || f == Monthly || f == Custom || f == Hourly
}

// maxEvery bounds Every per frequency: an interval must come round
// within the Horizon.
var maxEvery = map[Frequency]int{Hourly: 24 * 365, Daily: 365, Weekly: 52, Monthly: 12}

// MaxRuns bounds Spec.MaxRuns.
const MaxRuns = 1_000_000

// compileStart reads Start, the origin of intervals: noon UTC of its date
// (the zero time when there is none).
func compileStart(s Spec, p *failure.Problems) time.Time {
	if s.Start == "" {
		if s.Frequency == Hourly || s.Every > 1 {
			p.Add("missing", "the schedule needs the date its intervals count from", "start")
		}
		return time.Time{}
	}
	d, err := time.Parse(DateLayout, s.Start)
	if err != nil {
		p.Add("value_error", "start must be a date YYYY-MM-DD", "start")
		return time.Time{}
	}
	return d.Add(12 * time.Hour)
}

// compileInterval checks Every, DaysOfWeek and the end of a Spec.
func compileInterval(s Spec, p *failure.Problems) {
	if limit, ok := maxEvery[s.Frequency]; ok && (s.Every < 0 || s.Every > limit) {
		p.Add("value_error", fmt.Sprintf("repeat_every must be between 1 and %d for %s jobs", limit, s.Frequency), "repeat_every")
	} else if !ok && s.Every > 1 && isFrequency(s.Frequency) {
		p.Add("value_error", "repeat_every is only used by hourly, daily, weekly and monthly jobs", "repeat_every")
	}
	for i, d := range s.DaysOfWeek {
		if d < 0 || d > 6 {
			p.Add("value_error", "days_of_week must be between 0 and 6 (0 is Sunday)", "days_of_week", i)
		}
	}
	if len(s.DaysOfWeek) > 0 && s.Frequency != Weekly && isFrequency(s.Frequency) {
		p.Add("value_error", "days_of_week is only used by weekly jobs", "days_of_week")
	}
	if s.MaxRuns < 0 || s.MaxRuns > MaxRuns {
		p.Add("value_error", fmt.Sprintf("end_occurrences must be between 1 and %d", MaxRuns), "end_occurrences")
	}
}

// Bounds of a job's description.
const (
	MaxNameLength        = 200
	MaxDescriptionLength = 2000
	MaxTags              = 20
	MaxTagLength         = 50
)

// checkURL adds what is wrong with a URL the scheduler calls, naming it
// name in messages and path in the problem.
func checkURL(raw, name string, p *failure.Problems, path ...any) {
	switch u, err := url.Parse(raw); {
	case len(raw) > 2048:
		p.Add("value_error", name+" is at most 2048 characters", path...)
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		p.Add("value_error", name+" must be an absolute http or https URL", path...)
	case u.User != nil:
		p.Add("value_error", name+" must not contain credentials", path...)
	}
}

// checkDescription adds what is wrong with a job's name, description and
// tags. A tag is 1 to 50 characters without commas (listings filter by
// comma-separated tags) or control characters.
func checkDescription(j Job, p *failure.Problems) {
	if utf8.RuneCountInString(j.Name) > MaxNameLength || !printable(j.Name) {
		p.Add("value_error", fmt.Sprintf("name is at most %d characters, without control characters", MaxNameLength), "name")
	}
	if utf8.RuneCountInString(j.Description) > MaxDescriptionLength || !utf8.ValidString(j.Description) {
		p.Add("value_error", fmt.Sprintf("description is at most %d characters", MaxDescriptionLength), "description")
	}
	if len(j.Tags) > MaxTags {
		p.Add("value_error", fmt.Sprintf("tags are at most %d", MaxTags), "tags")
	}
	for i, tag := range j.Tags {
		if tag == "" || utf8.RuneCountInString(tag) > MaxTagLength || strings.Contains(tag, ",") || !printable(tag) {
			p.Add("value_error", fmt.Sprintf("a tag is 1 to %d characters, without commas or control characters", MaxTagLength), "tags", i)
		}
	}
}

func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// Validate checks every field of a job and returns its Plan, or a
// validation failure naming each broken rule. Whether the endpoint's
// address is public is checked by the caller, which can resolve names.
func Validate(j Job, parser Parser) (Plan, error) {
	var p failure.Problems
	if j.EndpointURL == "" {
		p.Add("missing", "Field required", "endpoint_url")
	} else {
		checkURL(j.EndpointURL, "endpoint_url", &p, "endpoint_url")
	}
	if j.SuccessURL != "" {
		checkURL(j.SuccessURL, "success_url", &p, "callbacks", "success_url")
	}
	if j.FailureURL != "" {
		checkURL(j.FailureURL, "failure_url", &p, "callbacks", "failure_url")
	}
	switch methods := methodsOf(j); {
	case j.Method == "":
		p.Add("missing", "Field required", "method")
	case !slices.Contains(methods, j.Method):
		p.Add("enum", "method must be one of "+strings.Join(methods, ", "), "method")
	}
	if j.Frequency == Hourly && j.Origin != OriginA1Cron {
		p.Add("enum", FrequencyMessage, "frequency")
	}
	checkDescription(j, &p)
	if len(j.Headers) > MaxHeaders {
		p.Add("value_error", "headers may have at most 50 entries", "headers")
	}
	for name, value := range j.Headers {
		if msg := headerProblem(name, value); msg != "" {
			p.Add("value_error", msg, "headers", name)
		}
	}
	if j.Body != nil {
		trimmed := bytes.TrimSpace(j.Body)
		switch {
		case len(trimmed) > MaxBodyBytes:
			p.Add("value_error", "body is at most 64 KiB of JSON", "body")
		case len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed):
			p.Add("dict_type", "body must be a JSON object", "body")
		case ValidMethod(j.Method) && !HasBody(j.Method):
			p.Add("value_error", "body is sent only with POST, PUT and PATCH", "body")
		}
	}
	if j.TextBody != nil {
		switch {
		case len(*j.TextBody) > MaxBodyBytes:
			p.Add("value_error", "body is at most 64 KiB", "body")
		case !utf8.ValidString(*j.TextBody):
			p.Add("value_error", "body must be UTF-8 text", "body")
		case *j.TextBody != "" && ValidMethod(j.Method) && !HasBody(j.Method):
			p.Add("value_error", "body is sent only with POST, PUT and PATCH", "body")
		}
	}
	if j.RetryDelay < 0 || j.RetryDelay > MaxRetryDelay {
		p.Add("value_error", "retry_delay_seconds must be between 1 and 86400", "retry_delay_seconds")
	}
	if j.Timeout != 0 && (j.Timeout < time.Second || j.Timeout > MaxTimeout) {
		p.Add("value_error", "timeout_seconds must be between 1 and 300", "timeout_seconds")
	}
	if j.Retries < 0 || j.Retries > MaxRetries {
		p.Add("value_error", fmt.Sprintf("retries must be between 0 and %d", MaxRetries), "retries")
	}
	plan := Compile(j.Spec, parser, &p)
	if err := p.Err(); err != nil {
		return Plan{}, err
	}
	return plan, nil
}
