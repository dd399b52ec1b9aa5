package graphql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/bootstrap"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

type cronJobData struct {
	ID             string `json:"id"`
	EndpointURL    string `json:"endpointUrl"`
	Method         string `json:"method"`
	Frequency      string `json:"frequency"`
	Time           string `json:"time"`
	Timezone       string `json:"timezone"`
	Status         string `json:"status"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	Body           *string
	Headers        []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
	NextExecution *string `json:"nextExecution"`
	LastExecution *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"lastExecution"`
}

const cronFields = `id endpointUrl method frequency time timezone status timeoutSeconds body headers { name value } nextExecution lastExecution { id status }`

func TestCronJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		create := func(c credentials, hhmm string) cronJobData {
			var d struct {
				CreateCronJob cronJobData `json:"createCronJob"`
			}
			b.data(t, c, `mutation($t: String) { createCronJob(input: {
				endpointUrl: "http://127.0.0.1:9/hook", method: "POST", body: "{\"ping\":true}",
				headers: [{name: "X-Job", value: "nightly"}], frequency: DAILY, time: $t, timezone: "Europe/Berlin"
			}) { `+cronFields+` } }`, map[string]any{"t": hhmm}, &d)
			return d.CreateCronJob
		}
		first := create(b.acme, "09:00")
		second := create(b.acme, "21:30")
		foreign := create(b.other, "08:00")

		require.Equal(t, "ACTIVE", first.Status)
		require.Equal(t, "DAILY", first.Frequency)
		require.Equal(t, "POST", first.Method)
		require.Equal(t, `{"ping":true}`, *first.Body)
		require.Equal(t, 30, first.TimeoutSeconds)
		require.Len(t, first.Headers, 1)
		require.NotNil(t, first.NextExecution)
		next, err := time.Parse(time.RFC3339Nano, *first.NextExecution)
		require.NoError(t, err)
		berlin, _ := time.LoadLocation("Europe/Berlin")
		require.Equal(t, "09:00", next.In(berlin).Format("15:04"), "next execution at 09:00 in the job's zone")
		require.Nil(t, first.LastExecution)

		// Two finished executions of the first job, one of the second.
		ctx := context.Background()
		slot := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
		insert := func(job cronJobData, account string, at time.Time, status cron.ExecutionStatus) string {
			id := ident.New(ident.Execution)
			_, err := b.db.CronStore().Claim(ctx, claimExecutions([]cron.Execution{{
				ID: id, JobID: job.ID, AccountID: account, Slot: at, StartedAt: at, Status: status, Attempt: 1,
			}}))
			require.NoError(t, err)
			return id
		}
		insert(first, b.acme.accountID, slot, cron.Failed)
		latest := insert(first, b.acme.accountID, slot.Add(24*time.Hour), cron.Success)
		other := insert(second, b.acme.accountID, slot, cron.Failed)

		t.Run("ListsPagesWithLastExecutions", func(t *testing.T) {
			var d struct {
				CronJobs struct {
					Nodes      []cronJobData `json:"nodes"`
					PageInfo   pageInfo      `json:"pageInfo"`
					TotalCount int           `json:"totalCount"`
				} `json:"cronJobs"`
			}
			q := `query($after: String) { cronJobs(first: 1, after: $after) { nodes { ` + cronFields + ` } pageInfo { hasNextPage endCursor } totalCount } }`
			b.data(t, b.acme, q, nil, &d)
			require.Equal(t, 2, d.CronJobs.TotalCount, "the other account's job is not counted")
			require.Len(t, d.CronJobs.Nodes, 1)
			require.Equal(t, first.ID, d.CronJobs.Nodes[0].ID, "oldest first")
			require.Equal(t, latest, d.CronJobs.Nodes[0].LastExecution.ID)
			require.Equal(t, "SUCCESS", d.CronJobs.Nodes[0].LastExecution.Status)
			require.True(t, d.CronJobs.PageInfo.HasNextPage)
			b.data(t, b.acme, q, map[string]any{"after": *d.CronJobs.PageInfo.EndCursor}, &d)
			require.Equal(t, second.ID, d.CronJobs.Nodes[0].ID)
			require.Equal(t, other, d.CronJobs.Nodes[0].LastExecution.ID)
			require.False(t, d.CronJobs.PageInfo.HasNextPage)
		})

		t.Run("Executions", func(t *testing.T) {
			var d struct {
				CronJob struct {
					Executions struct {
						Nodes []struct {
							ID     string `json:"id"`
							Status string `json:"status"`
						} `json:"nodes"`
						TotalCount int `json:"totalCount"`
					} `json:"executions"`
				} `json:"cronJob"`
			}
			q := `query($id: ID!, $s: CronExecutionStatus) { cronJob(id: $id) { executions(status: $s) { nodes { id status } totalCount } } }`
			b.data(t, b.acme, q, map[string]any{"id": first.ID}, &d)
			require.Equal(t, 2, d.CronJob.Executions.TotalCount)
			require.Equal(t, latest, d.CronJob.Executions.Nodes[0].ID, "newest first")
			b.data(t, b.acme, q, map[string]any{"id": first.ID, "s": "FAILED"}, &d)
			require.Len(t, d.CronJob.Executions.Nodes, 1)
			require.Equal(t, "FAILED", d.CronJob.Executions.Nodes[0].Status)
		})

		t.Run("PauseResumeUpdateDelete", func(t *testing.T) {
			var d map[string]cronJobData
			b.data(t, b.acme, `mutation($id: ID!) { pauseCronJob(id: $id) { status nextExecution } }`, map[string]any{"id": second.ID}, &d)
			require.Equal(t, "PAUSED", d["pauseCronJob"].Status)
			require.Nil(t, d["pauseCronJob"].NextExecution)
			b.data(t, b.acme, `mutation($id: ID!) { resumeCronJob(id: $id) { status nextExecution } }`, map[string]any{"id": second.ID}, &d)
			require.Equal(t, "ACTIVE", d["resumeCronJob"].Status)
			require.NotNil(t, d["resumeCronJob"].NextExecution)
			b.data(t, b.acme, `mutation($id: ID!) { updateCronJob(id: $id, input: {time: "10:15", method: "PUT"}) { time method endpointUrl } }`, map[string]any{"id": second.ID}, &d)
			require.Equal(t, "10:15", d["updateCronJob"].Time)
			require.Equal(t, "PUT", d["updateCronJob"].Method)
			require.Equal(t, "http://127.0.0.1:9/hook", d["updateCronJob"].EndpointURL, "fields not given stay")

			var del map[string]string
			b.data(t, b.acme, `mutation($id: ID!) { deleteCronJob(id: $id) }`, map[string]any{"id": second.ID}, &del)
			require.Equal(t, second.ID, del["deleteCronJob"])
			resp := b.query(t, b.acme, `query($id: ID!) { cronJob(id: $id) { id } }`, map[string]any{"id": second.ID})
			require.Empty(t, resp.Errors)
			require.JSONEq(t, `{"cronJob": null}`, string(resp.Data))
		})

		t.Run("ValidationUsesTheCronRules", func(t *testing.T) {
			resp := b.query(t, b.acme, `mutation { createCronJob(input: {endpointUrl: "http://127.0.0.1:9/", method: "GET", frequency: WEEKLY, time: "25:00", timezone: "UTC"}) { id } }`, nil)
			require.Len(t, resp.Errors, 1)
			require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
		})

		t.Run("AnotherAccountsJobIsNotFound", func(t *testing.T) {
			resp := b.query(t, b.acme, `query($id: ID!) { cronJob(id: $id) { id endpointUrl } }`, map[string]any{"id": foreign.ID})
			require.Empty(t, resp.Errors)
			require.JSONEq(t, `{"cronJob": null}`, string(resp.Data))
			for _, m := range []string{"pauseCronJob", "resumeCronJob", "deleteCronJob"} {
				sel := " { id }"
				if m == "deleteCronJob" {
					sel = ""
				}
				resp := b.query(t, b.acme, fmt.Sprintf(`mutation($id: ID!) { %s(id: $id)%s }`, m, sel), map[string]any{"id": foreign.ID})
				require.Len(t, resp.Errors, 1, m)
				require.Equal(t, "not_found", resp.Errors[0].Extensions["code"], m)
			}
			resp = b.query(t, b.acme, `mutation($id: ID!) { updateCronJob(id: $id, input: {time: "01:00"}) { id } }`, map[string]any{"id": foreign.ID})
			require.Equal(t, "not_found", resp.Errors[0].Extensions["code"])
			var d map[string]cronJobData
			b.data(t, b.other, `query($id: ID!) { cronJob(id: $id) { status time } }`, map[string]any{"id": foreign.ID}, &d)
			require.Equal(t, "ACTIVE", d["cronJob"].Status, "the owner's job is untouched")
			require.Equal(t, "08:00", d["cronJob"].Time)
		})
	})
}

// Listing cron jobs with their last executions costs the same statements
// for 5 jobs as for 20: the count and the page of the listing, and one
// read of the page's last executions.
func TestCronListingIssuesABoundedNumberOfStatements(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
			c.RunJobs = false
			c.AuthCacheTTL = time.Hour
		}})
		log := &statementLog{}
		b.db.AddQueryHook(log)
		ctx := context.Background()
		for i := range 20 {
			var d struct {
				CreateCronJob struct{ ID string } `json:"createCronJob"`
			}
			b.data(t, b.acme, fmt.Sprintf(`mutation { createCronJob(input: {endpointUrl: "http://127.0.0.1:9/%d", method: "GET", frequency: DAILY, time: "09:00", timezone: "UTC"}) { id } }`, i), nil, &d)
			_, err := b.db.CronStore().Claim(ctx, claimExecutions([]cron.Execution{{
				ID: ident.New(ident.Execution), JobID: d.CreateCronJob.ID, AccountID: b.acme.accountID,
				Slot: time.Now().Add(-time.Hour), StartedAt: time.Now().Add(-time.Hour), Status: cron.Success, Attempt: 1,
			}}))
			require.NoError(t, err)
		}
		counts := map[int]int{}
		for _, first := range []int{5, 20} {
			log.take()
			var d struct {
				CronJobs struct {
					Nodes []struct {
						LastExecution *struct{ ID string } `json:"lastExecution"`
					} `json:"nodes"`
				} `json:"cronJobs"`
			}
			b.data(t, b.acme, `query($n: Int) { cronJobs(first: $n) { nodes { id lastExecution { id status } } } }`, map[string]any{"n": first}, &d)
			stmts := log.take()
			require.Len(t, d.CronJobs.Nodes, first)
			for _, n := range d.CronJobs.Nodes {
				require.NotNil(t, n.LastExecution)
			}
			counts[first] = len(stmts)
			require.LessOrEqual(t, len(stmts), 3, "statements for %d jobs:\n%s", first, strings.Join(stmts, "\n"))
		}
		require.Equal(t, counts[5], counts[20])
	})
}

// claimExecutions is an enqueuer's claim that stores execs as they are,
// without queue jobs.
func claimExecutions(execs []cron.Execution) func(context.Context, appcron.Claims) (appcron.Runs, error) {
	return func(context.Context, appcron.Claims) (appcron.Runs, error) {
		runs := make([]appcron.Run, len(execs))
		for i, e := range execs {
			runs[i] = appcron.Run{Execution: e}
		}
		return appcron.Runs{Runs: runs}, nil
	}
}
