package graphql_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/bootstrap"
	"github.com/switchboard-dev/switchboard/domain/email"
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

// The attachments of a page of received emails (a mailbox, the
// account's emails, a thread) are read in one statement, for 3 emails as
// for 12.
func TestEmailAttachmentsAreReadOncePerPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		var svc *appemail.Service
		b := setupWith(t, dialect, appOptions{extra: []fx.Option{fx.Populate(&svc)}, configure: func(c *bootstrap.Config) {
			c.AuthCacheTTL = time.Hour
		}})
		acc := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
		domain := acc["data"].(map[string]any)["service_email_domain"].(string)
		b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/create-email", map[string]any{"address": "support.bot", "domain_name": domain})
		mailbox := "support.bot@" + domain
		const emails = 12
		for i := range emails {
			raw := fmt.Sprintf("From: ann@example.org\r\nTo: %s\r\nSubject: Report %d\r\nMessage-ID: <r%d@example.org>\r\n"+
				"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHere.\r\n"+
				"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a%d.txt\r\n\r\nfile %d\r\n--b--\r\n", mailbox, i, i, i, i)
			_, err := svc.Spool(t.Context(), email.Spooled{RemoteIP: "127.0.0.1", MailFrom: "ann@example.org",
				Recipients: []email.SpooledRecipient{{Address: mailbox, AccountID: b.acme.accountID}}, Raw: []byte(raw)})
			require.NoError(t, err)
		}
		type page struct {
			MailboxEmails struct {
				Nodes []struct {
					Attachments []struct{ Name string } `json:"attachments"`
				} `json:"nodes"`
			} `json:"mailboxEmails"`
		}
		const q = `query($a: String!, $n: Int) { mailboxEmails(address: $a, first: $n) { nodes { attachments { name } } } }`
		eventually(t, func() bool {
			var p page
			b.data(t, b.acme, q, map[string]any{"a": mailbox, "n": 100}, &p)
			return len(p.MailboxEmails.Nodes) == emails
		}, "the emails are received")
		log := &statementLog{}
		b.db.AddQueryHook(log)
		attachmentReads := func() int {
			n := 0
			for _, s := range log.take() {
				if strings.Contains(s, "email_attachments") {
					n++
				}
			}
			return n
		}
		for _, n := range []int{3, emails} {
			log.take()
			var p page
			b.data(t, b.acme, q, map[string]any{"a": mailbox, "n": n}, &p)
			require.Len(t, p.MailboxEmails.Nodes, n)
			for _, e := range p.MailboxEmails.Nodes {
				require.Len(t, e.Attachments, 1)
			}
			require.Equal(t, 1, attachmentReads(), "one read of attachments for %d emails", n)
		}
		log.take()
		var all struct {
			Emails struct {
				Nodes []struct {
					Attachments []struct{ Name string } `json:"attachments"`
				} `json:"nodes"`
			} `json:"emails"`
		}
		b.data(t, b.acme, `{ emails(first: 20) { nodes { attachments { name } } } }`, nil, &all)
		require.Len(t, all.Emails.Nodes, emails)
		require.Equal(t, 1, attachmentReads())
	})
}
