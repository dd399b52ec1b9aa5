package graph

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// CronUseCases are the cron job use cases, as REST uses them;
// *cron.Service implements them. Lookups of another account's jobs are
// NotFound.
type CronUseCases interface {
	// Create's answer records an Idempotency-Key's answer (REST's); GraphQL
	// has no keys and passes nil.
	Create(ctx context.Context, accountID string, j cron.Job, answer *idempotency.Completion[cron.Job]) (cron.Job, error)
	List(ctx context.Context, q appcron.JobQuery) ([]cron.Job, int, error)
	Get(ctx context.Context, accountID, id string) (appcron.JobDetails, error)
	Update(ctx context.Context, accountID, id string, p appcron.Patch) (cron.Job, error)
	Pause(ctx context.Context, accountID, id string) (cron.Job, error)
	Resume(ctx context.Context, accountID, id string) (cron.Job, error)
	Delete(ctx context.Context, accountID, id string) error
	Executions(ctx context.Context, accountID string, q appcron.ExecutionQuery) ([]cron.Execution, int, error)
	// LastExecutions reads the latest finished execution of each of the
	// account's jobs among jobIDs, in one statement.
	LastExecutions(ctx context.Context, accountID string, jobIDs []string) (map[string]cron.Execution, error)
}

var _ CronUseCases = (*appcron.Service)(nil)

// errNoCron answers the cron fields of an app built without cron jobs.
var errNoCron = &failure.Error{Kind: failure.KindNotImplemented, Code: "cron_unavailable", Message: "cron jobs are not configured"}

// Offset cursors page the listings whose use cases page by offset: the
// order is stable (oldest job first, newest execution or delivery first)
// and rows are appended at one end.
func encodeOffset(kind string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "|" + strconv.Itoa(offset)))
}

func decodeOffset(kind string, cursor *string) (int, error) {
	if cursor == nil {
		return 0, nil
	}
	invalid := failure.Invalid(failure.Field("value_error", "after is not a cursor this field returned", "after"))
	raw, err := base64.RawURLEncoding.DecodeString(*cursor)
	if err != nil {
		return 0, invalid
	}
	k, n, ok := strings.Cut(string(raw), "|")
	off, convErr := strconv.Atoi(n)
	if !ok || k != kind || convErr != nil || off < 0 {
		return 0, invalid
	}
	return off, nil
}

// pageInfo builds the page info of an offset page of n items out of total.
func offsetPageInfo(kind string, offset, n, total int) (*model.PageInfo, []string) {
	cursors := make([]string, n)
	for i := range cursors {
		cursors[i] = encodeOffset(kind, offset+i+1)
	}
	info := &model.PageInfo{HasNextPage: offset+n < total}
	if n > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[n-1]
	}
	return info, cursors
}

func cronJobConnection(jobs []cron.Job, offset, total int) *model.CronJobConnection {
	info, cursors := offsetPageInfo("c", offset, len(jobs), total)
	c := &model.CronJobConnection{Nodes: jobs, PageInfo: info, TotalCount: total, Edges: make([]model.CronJobEdge, len(jobs))}
	if c.Nodes == nil {
		c.Nodes = []cron.Job{}
	}
	for i := range jobs {
		c.Edges[i] = model.CronJobEdge{Cursor: cursors[i], Node: &jobs[i]}
	}
	return c
}

func cronExecutionConnection(execs []cron.Execution, offset, total int) *model.CronExecutionConnection {
	info, cursors := offsetPageInfo("e", offset, len(execs), total)
	c := &model.CronExecutionConnection{Nodes: execs, PageInfo: info, TotalCount: total, Edges: make([]model.CronExecutionEdge, len(execs))}
	if c.Nodes == nil {
		c.Nodes = []cron.Execution{}
	}
	for i := range execs {
		c.Edges[i] = model.CronExecutionEdge{Cursor: cursors[i], Node: &execs[i]}
	}
	return c
}

// cronJobFromInput is a new job as REST's create builds it.
func cronJobFromInput(in model.CronJobInput) (cron.Job, error) {
	j := cron.Job{
		EndpointURL: in.EndpointURL, Method: in.Method, Headers: headerMap(in.Headers),
		Spec: cron.Spec{
			Frequency: in.Frequency, Time: deref(in.Time), Timezone: deref(in.Timezone),
			DayOfWeek: in.DayOfWeek, DayOfMonth: in.DayOfMonth, CustomSchedule: deref(in.CustomSchedule),
		},
		Timeout: timeoutOf(in.TimeoutSeconds),
		Retries: intOr(in.Retries, 0),
	}
	if in.Body != nil {
		body, err := jsonBody(*in.Body)
		if err != nil {
			return cron.Job{}, err
		}
		j.Body = body
	}
	return j, nil
}

// cronPatch is an update: the fields given change, the others stay.
func cronPatch(in model.CronJobPatch) (appcron.Patch, error) {
	var p appcron.Patch
	set := func(v *string, dst *appcron.Value[string]) {
		if v != nil {
			*dst = appcron.Value[string]{Set: true, V: *v}
		}
	}
	setInt := func(v *int, dst *appcron.Value[int]) {
		if v != nil {
			*dst = appcron.Value[int]{Set: true, V: *v}
		}
	}
	set(in.EndpointURL, &p.EndpointURL)
	set(in.Method, &p.Method)
	set(in.Time, &p.Time)
	set(in.Timezone, &p.Timezone)
	set(in.CustomSchedule, &p.CustomSchedule)
	if in.Frequency != nil {
		p.Frequency = appcron.Value[string]{Set: true, V: string(*in.Frequency)}
	}
	setInt(in.DayOfWeek, &p.DayOfWeek)
	setInt(in.DayOfMonth, &p.DayOfMonth)
	setInt(in.TimeoutSeconds, &p.TimeoutSeconds)
	setInt(in.Retries, &p.Retries)
	if in.Headers != nil {
		p.Headers = appcron.Value[map[string]string]{Set: true, V: headerMap(in.Headers)}
	}
	if in.Body != nil {
		body, err := jsonBody(*in.Body)
		if err != nil {
			return appcron.Patch{}, err
		}
		p.Body = appcron.Value[json.RawMessage]{Set: true, V: body}
	}
	return p, nil
}

// jsonBody checks that a body given as text is a JSON object.
func jsonBody(s string) (json.RawMessage, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, failure.Invalid(failure.Field("value_error", "body must be a JSON object, as text", "body"))
	}
	return json.RawMessage(s), nil
}

func headerMap(hs []model.HTTPHeaderInput) map[string]string {
	if hs == nil {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

func headerList(m map[string]string) []model.HTTPHeader {
	out := make([]model.HTTPHeader, 0, len(m))
	for k, v := range m {
		out = append(out, model.HTTPHeader{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b model.HTTPHeader) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// timeoutOf reads timeoutSeconds as REST does: absent is the default, zero
// or less is refused by validation.
func timeoutOf(seconds *int) time.Duration {
	if seconds == nil {
		return 0
	}
	if *seconds <= 0 {
		return -1
	}
	return time.Duration(*seconds) * time.Second
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// clampedFirst is first within the page limits.
func clampedFirst(first *int) int {
	return appmessaging.ClampPage(intOr(first, appmessaging.DefaultPageSize))
}
