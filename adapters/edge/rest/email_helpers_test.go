package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/email/mailparse"
	"github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/email/smtp"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// The domains of the email tests: the service's own, a custom domain of
// the first account and one of the other account.
const (
	serviceDomain = "mail.switchboard.test"
	acmeDomain    = "acme.example"
	otherDomain   = "other.example"
)

// emailBundle is the real HTTP interface over the real account and email
// use cases, a fresh database, a running job runner and a Sender (the
// sandbox mailbox unless the test gives another), so that queued emails
// are really delivered.
type emailBundle struct {
	callers
	mailbox store.MailboxStore
	// files serves attachments on 127.0.0.1.
	files *httptest.Server
}

type emailOptions struct {
	// sender replaces the sandbox mailbox.
	sender appemail.Sender
}

func setupEmail(t *testing.T, dialect store.Dialect, opts emailOptions) *emailBundle {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, oCred, err := acc.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	_, err = acc.AddDomain(ctx, a.ID, acmeDomain)
	require.NoError(t, err)
	_, err = acc.AddDomain(ctx, o.ID, otherDomain)
	require.NoError(t, err)

	mailbox := db.MailboxStore()
	sender := opts.sender
	if sender == nil {
		sender = sandbox.New(mailbox, appemail.DefaultMailboxLimits, nil)
	}
	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	svc := appemail.NewService(appemail.Deps{
		Committer: db, Store: db.EmailStore(),
		Sender: sender, Fetcher: guard.NewFetcher(5 * time.Second), URLs: guard,
		ServiceDomain: serviceDomain, Logger: quiet,
		Inbox: db.InboxStore(), Parser: mailparse.New(mailparse.DefaultLimits), Composer: smtp.Composer{},
	})
	// Retries come after milliseconds, so a 451 then 250 settles at once.
	jr, err := runner.New(db.JobQueue(), db, runner.Config{PollInterval: 20 * time.Millisecond, Logger: quiet},
		runner.Kind{Name: appemail.DeliverKind, Handler: svc, Backoff: jobs.ExponentialBackoff(10*time.Millisecond, 50*time.Millisecond), Timeout: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, jr.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = jr.Stop(stopCtx)
	})

	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(db.IdempotencyKeys(), 0, nil, quiet), Ready: db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited,
	}, rest.Deps{Accounts: acc, Email: svc, EmailDomain: serviceDomain})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	files := httptest.NewServer(fileHandler())
	t.Cleanup(files.Close)
	return &emailBundle{
		callers: callers{
			client: openapitest.New(t, srv.URL), db: db,
			account: a.ID, key: cred.Key, secret: cred.Secret,
			other: o.ID, oKey: oCred.Key, oSecret: oCred.Secret,
		},
		mailbox: mailbox, files: files,
	}
}

// sent lists what the sandbox mailbox kept of the account's emails,
// newest first.
func (b *emailBundle) sent(t *testing.T) []appemail.KeptEmail {
	t.Helper()
	page, err := b.mailbox.Kept(context.Background(), b.account, 0, appemail.MaxPageSize)
	require.NoError(t, err)
	return page.Emails
}

// fileHandler serves the attachments of the tests.
func fileHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/report.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte("%PDF-1.4\nreport\n"))
	})
	// huge.pdf declares more than the document limit.
	mux.HandleFunc("/huge.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Length", "104857601")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("%PDF"))
	})
	mux.HandleFunc("/gone.pdf", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	return mux
}

// createAddress creates local@domain for the first account.
func (b *emailBundle) createAddress(t *testing.T, local, domain string) string {
	t.Helper()
	r := b.post("/v1/emails/"+b.account+"/create-email", map[string]any{"address": local, "domain_name": domain})
	require.Equal(t, http.StatusOK, r.StatusCode, "create: %s", r.Body)
	return r.JSON(t)["address"].(string)
}

// send sends an email as the first account and returns its id.
func (b *emailBundle) send(t *testing.T, body map[string]any) string {
	t.Helper()
	r := b.post("/v1/emails/"+b.account+"/send", body)
	require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
	out := r.JSON(t)
	require.Equal(t, "queued", out["status"])
	return out["email_id"].(string)
}

// waitEmail waits until an email is no longer queued and returns its
// details, read through the API.
func (b *emailBundle) waitEmail(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var status string
		require.NoError(t, b.db.Bun().NewRaw("SELECT status FROM emails WHERE id = ?", id).Scan(context.Background(), &status))
		if status != "queued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("email %s is still queued", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := b.get("/v1/emails/" + b.account + "/messages/" + id)
	require.Equal(t, http.StatusOK, r.StatusCode, "details: %s", r.Body)
	return r.JSON(t)["data"].(map[string]any)
}

// emailCount is how many emails the database holds.
func (b *emailBundle) emailCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM emails").Scan(context.Background(), &n))
	return n
}

// requireStatus checks a non-validation error's status and code.
func requireStatus(t *testing.T, r openapitest.Response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.StatusCode, "body: %s", r.Body)
	require.Equal(t, code, r.JSON(t)["code"], "body: %s", r.Body)
}

// requireBadRequest checks a 400 whose detail has an item at loc with the
// given type.
func requireBadRequest(t *testing.T, r openapitest.Response, typ string, loc ...any) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.StatusCode, "body: %s", r.Body)
	items := r.JSON(t)["detail"].([]any)
	for _, it := range items {
		item := it.(map[string]any)
		if sameLoc(item["loc"], loc) && item["type"] == typ {
			return
		}
	}
	t.Fatalf("no %s error at %v: %s", typ, loc, r.Body)
}

// jobState waits until the one email delivery job of the bundle is
// finished (completed, dead or cancelled) and returns its state. (A
// finished job no longer carries its unique key, so it is found by kind.)
func (b *emailBundle) jobState(t *testing.T, emailID string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var states []string
		require.NoError(t, b.db.Bun().NewRaw("SELECT state FROM jobs WHERE kind = ?", appemail.DeliverKind).Scan(context.Background(), &states))
		require.Len(t, states, 1, "one delivery job for %s", emailID)
		state := states[0]
		if state == "completed" || state == "dead" || state == "cancelled" {
			return state
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery job of %s is still %s", emailID, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
