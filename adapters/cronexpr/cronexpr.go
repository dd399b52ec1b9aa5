// Package cronexpr parses the 5-field cron expressions of custom cron
// jobs with github.com/netresearch/go-cron, the maintained fork of
// robfig/cron, configured to read expressions as robfig/cron v3 and
// classic crontab do: minute, hour, day of month, month, day of week
// (0 or 7 is Sunday, names allowed), and a day that matches either the
// day-of-month or the day-of-week field when both are restricted.
package cronexpr

import (
	"fmt"

	gocron "github.com/netresearch/go-cron"

	"github.com/switchboard-dev/switchboard/domain/cron"
)

// Parser implements cron.Parser.
type Parser struct {
	p gocron.Parser
}

var _ cron.Parser = Parser{}

// New returns a parser that caches what it parsed.
func New() Parser {
	return Parser{p: gocron.MustNewParser(gocron.Minute | gocron.Hour | gocron.Dom | gocron.Month | gocron.Dow | gocron.DowOrDom).WithCache()}
}

// Parse reads one expression.
func (p Parser) Parse(expr string) (cron.Schedule, error) {
	s, err := p.p.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	return s, nil
}
