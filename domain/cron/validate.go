package cron

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"time"

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
	case Daily, Weekly, Monthly, Custom:
	default:
		p.Add("enum", FrequencyMessage, "frequency")
	}
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
	case s.Frequency == Weekly && s.DayOfWeek == nil:
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
	return f == Daily || f == Weekly || f == Monthly || f == Custom
}

// Validate checks every field of a job and returns its Plan, or a
// validation failure naming each broken rule. Whether the endpoint's
// address is public is checked by the caller, which can resolve names.
func Validate(j Job, parser Parser) (Plan, error) {
	var p failure.Problems
	switch u, err := url.Parse(j.EndpointURL); {
	case j.EndpointURL == "":
		p.Add("missing", "Field required", "endpoint_url")
	case len(j.EndpointURL) > 2048:
		p.Add("value_error", "endpoint_url is at most 2048 characters", "endpoint_url")
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		p.Add("value_error", "endpoint_url must be an absolute http or https URL", "endpoint_url")
	case u.User != nil:
		p.Add("value_error", "endpoint_url must not contain credentials", "endpoint_url")
	}
	switch {
	case j.Method == "":
		p.Add("missing", "Field required", "method")
	case !ValidMethod(j.Method):
		p.Add("enum", "method must be one of GET, POST, PUT, DELETE", "method")
	}
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
			p.Add("value_error", "body is sent only with POST and PUT", "body")
		}
	}
	if j.Timeout != 0 && (j.Timeout < time.Second || j.Timeout > MaxTimeout) {
		p.Add("value_error", "timeout_seconds must be between 1 and 300", "timeout_seconds")
	}
	if j.Retries < 0 || j.Retries > MaxRetries {
		p.Add("value_error", "retries must be between 0 and 5", "retries")
	}
	plan := Compile(j.Spec, parser, &p)
	if err := p.Err(); err != nil {
		return Plan{}, err
	}
	return plan, nil
}
