package graphql_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// statementLog is a bun query hook that records the statements the store
// runs for an authenticated request (the store passes its prepared reads
// through the same hooks); statements of background work (the Postgres
// notifier, maintenance) carry no principal and are left out.
type statementLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (l *statementLog) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if _, ok := accounts.PrincipalFrom(ctx); !ok {
		return
	}
	q := strings.Join(strings.Fields(e.Query), " ")
	if len(q) > 160 {
		q = q[:160] + "…"
	}
	l.mu.Lock()
	l.stmts = append(l.stmts, q)
	l.mu.Unlock()
}

func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

const listingQuery = `query($first: Int) {
  threads(first: $first) {
    nodes {
      id name contact
      participants { address isAgent }
      messages(first: 5) { nodes { id content { text } status thread { id } } pageInfo { hasNextPage } }
      transcript(first: 5) { text }
    }
    pageInfo { hasNextPage endCursor }
  }
}`

// Listing threads with their participants and last messages costs the
// same three statements for 5 threads as for 50: the page, the
// participants of the page, the messages of the page (the threads the
// messages point back to are known from the page and cost nothing more;
// the transcripts are made of the same pages of messages).
func TestListingIssuesABoundedNumberOfStatements(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
			c.RunJobs = false // no runner polling beside the measured request
			c.AuthCacheTTL = time.Hour
		}})
		log := &statementLog{}
		b.db.AddQueryHook(log)
		const threads, perThread = 50, 6
		for i := range threads {
			user := fmt.Sprintf("+1415555%04d", 2000+i)
			for j := range perThread {
				b.inbound(t, b.acme, user, agentA, fmt.Sprintf("message %d of %d", j, i))
			}
		}
		b.query(t, b.acme, `{ account { id } }`, nil) // credentials verified and cached

		counts := map[int]int{}
		for _, first := range []int{5, 50} {
			log.take()
			var d struct {
				Threads struct {
					Nodes []struct {
						Participants []struct{ Address string } `json:"participants"`
						Messages     struct {
							Nodes []struct {
								Thread struct{ ID string } `json:"thread"`
							} `json:"nodes"`
							PageInfo pageInfo `json:"pageInfo"`
						} `json:"messages"`
						Transcript struct{ Text string } `json:"transcript"`
					} `json:"nodes"`
				} `json:"threads"`
			}
			b.data(t, b.acme, listingQuery, map[string]any{"first": first}, &d)
			stmts := log.take()
			require.Len(t, d.Threads.Nodes, first)
			for _, n := range d.Threads.Nodes {
				require.Len(t, n.Participants, 2)
				require.Len(t, n.Messages.Nodes, 5)
				require.True(t, n.Messages.PageInfo.HasNextPage)
				require.Equal(t, 5, strings.Count(n.Transcript.Text, "\n"), "a line per message")
			}
			counts[first] = len(stmts)
			require.LessOrEqual(t, len(stmts), 3, "statements for %d threads:\n%s", first, strings.Join(stmts, "\n"))
		}
		require.Equal(t, counts[5], counts[50], "the statement count does not grow with the page")
	})
}
