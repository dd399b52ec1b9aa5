package browser

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	domainaccount "github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// manyThreads is how many threads the paging test gives the account.
const manyThreads = 10_000

// seedThreads writes n individual threads of the account straight into
// its database, one a second apart, the newest with contact +1666 and i
// in seven digits. The rows go in five hundred to a statement: one
// InsertThread per thread costs the race-instrumented SQLite half a
// minute of CPU for ten thousand.
func seedThreads(n int) func(t *testing.T, dbURL string, s *server) {
	type threadRow struct {
		bun.BaseModel `bun:"table:threads"`
		ID            string    `bun:"id"`
		AccountID     string    `bun:"account_id"`
		Service       string    `bun:"service"`
		Type          string    `bun:"type"`
		AgentNumber   string    `bun:"agent_number"`
		Contact       string    `bun:"contact"`
		Name          string    `bun:"name"`
		LastInboundAt time.Time `bun:"last_inbound_at"`
		CreatedAt     time.Time `bun:"created_at"`
		UpdatedAt     time.Time `bun:"updated_at"`
	}
	type participantRow struct {
		bun.BaseModel `bun:"table:thread_participants"`
		ThreadID      string    `bun:"thread_id"`
		Address       string    `bun:"address"`
		Name          string    `bun:"name"`
		IsAgent       bool      `bun:"is_agent"`
		JoinedAt      time.Time `bun:"joined_at"`
	}
	const perStatement = 500
	return func(t *testing.T, dbURL string, s *server) {
		t.Helper()
		ctx := context.Background()
		db, err := store.Open(ctx, dbURL, store.Options{})
		require.NoError(t, err)
		defer db.Close()
		start := time.Now().UTC().Add(-time.Duration(n) * time.Second).Truncate(time.Microsecond)
		err = db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for from := 0; from < n; from += perStatement {
				var threads []threadRow
				var participants []participantRow
				for i := from; i < min(from+perStatement, n); i++ {
					at := start.Add(time.Duration(i) * time.Second)
					th := threadRow{
						ID: ident.New(ident.Thread), AccountID: s.Account.ID, Service: string(domainaccount.WhatsApp), Type: string(messaging.Individual),
						AgentNumber: s.Number, Contact: fmt.Sprintf("+1666%07d", i), Name: fmt.Sprintf("User %d", i), LastInboundAt: at, CreatedAt: at, UpdatedAt: at,
					}
					threads = append(threads, th)
					participants = append(participants,
						participantRow{ThreadID: th.ID, Address: s.Number, IsAgent: true, JoinedAt: at},
						participantRow{ThreadID: th.ID, Address: th.Contact, Name: th.Name, JoinedAt: at})
				}
				if _, err := tx.NewInsert().Model(&threads).Exec(ctx); err != nil {
					return err
				}
				if _, err := tx.NewInsert().Model(&participants).Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
}

var graphqlRequestLine = regexp.MustCompile(`method=POST path=/graphql .*duration=(\S+)`)

// Paging holds with 10,000 threads: the first page shows the 20 most
// recent, Next and Previous walk the pages, and the filter finds one
// thread among them all. The server time of the first page's requests is
// logged (from the server's request log and the browser's resource
// timing), not asserted.
func TestThreadsPagingWithTenThousandThreads(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{seed: seedThreads(manyThreads)})
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	before := len(graphqlRequestLine.FindAllStringSubmatch(s.logs.String(), -1))
	tb.open("/dashboard/threads")
	tb.waitReady()
	require.Equal(t, 20, tb.count(".thread-list li"))
	newest := fmt.Sprintf("User %d", manyThreads-1)
	require.Equal(t, newest, tb.text(".thread-list li:first-child .name"))
	for _, m := range graphqlRequestLine.FindAllStringSubmatch(s.logs.String(), -1)[before:] {
		t.Logf("first page, server log: POST /graphql took %s", m[1])
	}
	timing := eval[[]float64](tb, `performance.getEntriesByType('resource')
		.filter((e) => e.name.endsWith('/graphql'))
		.map((e) => Math.round((e.responseStart - e.requestStart) * 10) / 10)`)
	t.Logf("first page, browser resource timing: request to first byte of each /graphql request: %v ms", timing)

	for page := 2; page <= 4; page++ {
		tb.clickText("Next page")
		want := fmt.Sprintf("User %d", manyThreads-1-20*(page-1))
		tb.waitText(".thread-list li:first-child .name", want)
		require.Equal(t, 20, tb.count(".thread-list li"))
		require.Contains(t, tb.text("nav.pager .pager-status"), fmt.Sprintf("Page %d", page))
	}
	tb.clickText("Previous page")
	tb.waitText(".thread-list li:first-child .name", fmt.Sprintf("User %d", manyThreads-1-40))

	tb.fill(`input[name="phone"]`, "+16660001234")
	tb.clickText("Filter")
	tb.waitFor("one thread", `() => document.querySelectorAll('.thread-list li').length === 1`)
	require.True(t, strings.HasPrefix(tb.text(".thread-list li .name"), "User 1234"))
	require.Equal(t, "Page 1", strings.TrimSpace(tb.text("nav.pager .pager-status")))
	tb.requireHealthy()
}
