package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The story of issue 37, with the built binary and --smtp-listen: the
// agent sends an email; the user answers it from a mail client with real
// reply headers over SMTP (net/smtp); the answer lands in the email's
// thread and reaches the account's webhook as email.received with the
// extracted reply; the agent replies through REST; the user answers that
// from Debian's swaks, into the same thread, extracted; the agent answers
// through MCP (switchboard mcp); every email.sent and email.received
// reaches the webhook. Attachments download with credentials, and
// another account reaches none of it.
func TestInboundEmailEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		var (
			mu     sync.Mutex
			events []map[string]any
		)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var p map[string]any
			if json.Unmarshal(body, &p) == nil {
				mu.Lock()
				events = append(events, p)
				mu.Unlock()
			}
		}))
		t.Cleanup(hook.Close)

		b := setup(t, dialect)
		acct := b.createAccount(t, "Mailer")
		other := b.createAccount(t, "Other")
		headers := auth(acct.APIKey, acct.APISecret)
		api := b.serve(t, "--email-domain", "mail.acme.test", "--smtp-listen", "127.0.0.1:0", "--allow-private-urls", "127.0.0.1/32",
			"--smtp-dns", closedDNS(t))
		client := api.client(t)
		smtpAddr := smtpListenAddr(t, api)

		base := "/v1/emails/" + acct.AccountID
		r := client.Do(http.MethodPut, "/v1/accounts/"+acct.AccountID+"/webhook", map[string]any{"url": hook.URL + "/hooks"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPost, base+"/create-email", map[string]any{"address": "support.bot", "domain_name": "mail.acme.test"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPost, base+"/send", map[string]any{
			"sender_address": "support.bot@mail.acme.test", "recipient_address": "ann@example.org", "subject": "Your report", "body": "Hello Ann",
		}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		sent := r.JSON(t)
		messageID := sent["message_id"].(string)

		answer := "From: Ann <ann@example.org>\r\nTo: support.bot@mail.acme.test\r\nSubject: Re: Your report\r\n" +
			"Message-ID: <answer-1@example.org>\r\nIn-Reply-To: " + messageID + "\r\nReferences: " + messageID + "\r\n" +
			"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
			"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThanks!\r\n\r\nOn Tue, Nov 24, 2026 at 9:15 AM <support.bot@mail.acme.test> wrote:\r\n> Hello Ann\r\n" +
			"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=signed.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
		require.NoError(t, smtp.SendMail(smtpAddr, nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, []byte(answer)))
		err := smtp.SendMail(smtpAddr, nil, "ann@example.org", []string{"relay@example.com"}, []byte(answer))
		require.ErrorContains(t, err, "550")

		var page map[string]any
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, base+"/mailboxes/support.bot@mail.acme.test/messages", nil, headers...)
			page = r.JSON(t)
			return r.StatusCode == http.StatusOK && len(page["data"].([]any)) == 2
		}, 30*time.Second, 50*time.Millisecond, "the answer is received and listed")
		list := page["data"].([]any)
		received, sentItem := list[0].(map[string]any), list[1].(map[string]any)
		require.Equal(t, "inbound", received["direction"])
		require.Equal(t, "Thanks!", received["extracted_text"])
		require.Equal(t, sent["thread_id"], received["thread_id"])
		require.Equal(t, sent["email_id"], sentItem["email_id"])
		receivedID := received["email_id"].(string)

		r = client.Do(http.MethodGet, base+"/messages/"+receivedID, nil, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		details := r.JSON(t)["data"].(map[string]any)
		atts := details["attachments"].([]any)
		require.Len(t, atts, 1)
		att := atts[0].(map[string]any)
		require.Equal(t, "signed.pdf", att["name"])
		r = client.Do(http.MethodGet, base+"/messages/"+receivedID+"/attachments/"+att["id"].(string), nil, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.Equal(t, "%PDF-1.4\n", string(r.Body))
		r = client.Do(http.MethodGet, base+"/messages/"+receivedID+"/attachments/"+att["id"].(string), nil)
		require.Equal(t, http.StatusUnauthorized, r.StatusCode)

		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if e["event"] == "email.received" {
					return e["extracted_text"] == "Thanks!" && e["email_id"] == receivedID && e["thread_id"] == sent["thread_id"] &&
						strings.Contains(e["raw_email_data"].(string), "Thanks!")
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "the webhook gets email.received")

		r = client.Do(http.MethodPost, base+"/messages/"+receivedID+"/reply", map[string]any{"body": "You are welcome."}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		reply := r.JSON(t)
		require.Equal(t, sent["thread_id"], reply["thread_id"])
		require.Equal(t, "Re: Your report", reply["subject"])
		require.Equal(t, "ann@example.org", reply["recipient"])

		// Ann answers the reply from Debian's swaks, another ordinary mail
		// client, with the reply headers a client writes.
		swaks, err := exec.LookPath("swaks")
		require.NoError(t, err, "swaks is not installed (apt-get install swaks)")
		host, port, _ := net.SplitHostPort(smtpAddr)
		replyID := reply["message_id"].(string)
		out, err := exec.Command(swaks, "--server", host, "--port", port, "--helo", "client.example.org",
			"--from", "ann@example.org", "--to", "support.bot@mail.acme.test",
			"--header", "From: Ann <ann@example.org>", "--header", "Subject: Re: Re: Your report",
			"--header", "Message-Id: <answer-2@example.org>", "--header", "In-Reply-To: "+replyID,
			"--header", "References: "+messageID+" <answer-1@example.org> "+replyID,
			"--body", "One more question: by Friday?\n\nOn Tue, Nov 24, 2026 at 10:02 AM <support.bot@mail.acme.test> wrote:\n> You are welcome.\n").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "<-  250")
		var second map[string]any
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if e["event"] == "email.received" && e["message_id"] == "<answer-2@example.org>" {
					second = e
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "the webhook gets the second answer")
		require.Equal(t, sent["thread_id"], second["thread_id"], "the second answer lands in the same thread")
		require.Equal(t, "One more question: by Friday?", second["extracted_text"])

		// The agent answers it through MCP, as an LLM agent would, over
		// switchboard mcp.
		cmd := exec.Command(binary, "mcp", "--url", api.URL)
		cmd.Dir = t.TempDir()
		cmd.Env = processEnv([]string{"SWITCHBOARD_API_KEY=" + acct.APIKey, "SWITCHBOARD_API_SECRET=" + acct.APISecret})
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		call := func(tool string, args map[string]any, into any) {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
			require.NoError(t, err)
			require.False(t, res.IsError, "%s: %v", tool, res.StructuredContent)
			raw, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(raw, into))
		}
		var got struct {
			// Text is the reply without its quoted history.
			Text     string `json:"text"`
			ThreadID string `json:"thread_id"`
		}
		call("get_email", map[string]any{"email_id": second["email_id"]}, &got)
		require.Equal(t, "One more question: by Friday?", got.Text)
		require.Equal(t, sent["thread_id"], got.ThreadID)
		var mcpReply struct {
			EmailID   string `json:"email_id"`
			ThreadID  string `json:"thread_id"`
			Recipient string `json:"recipient"`
			InReplyTo string `json:"in_reply_to"`
		}
		call("reply_email", map[string]any{"email_id": second["email_id"], "body": "Yes, by Friday."}, &mcpReply)
		require.Equal(t, sent["thread_id"], mcpReply.ThreadID)
		require.Equal(t, "ann@example.org", mcpReply.Recipient)
		require.Equal(t, "<answer-2@example.org>", mcpReply.InReplyTo)
		require.NoError(t, cs.Close())

		// Every event of the story reaches the webhook: each of the three
		// sends is sent, each answer received.
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			sentIDs, receivedIDs := map[any]bool{}, map[any]bool{}
			for _, e := range events {
				switch e["event"] {
				case "email.sent":
					sentIDs[e["email_id"]] = true
				case "email.received":
					receivedIDs[e["email_id"]] = true
				}
			}
			return len(sentIDs) == 3 && sentIDs[sent["email_id"]] && sentIDs[reply["email_id"]] && sentIDs[mcpReply.EmailID] &&
				len(receivedIDs) == 2 && receivedIDs[receivedID] && receivedIDs[second["email_id"]]
		}, 30*time.Second, 50*time.Millisecond, "email.sent for each send and email.received for each answer")
		var thread []any
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, base+"/mailboxes/support.bot@mail.acme.test/messages", nil, headers...)
			thread = r.JSON(t)["data"].([]any)
			return len(thread) == 5
		}, 30*time.Second, 50*time.Millisecond)
		for _, item := range thread {
			require.Equal(t, sent["thread_id"], item.(map[string]any)["thread_id"], "one thread holds the whole exchange")
		}

		otherHeaders := auth(other.APIKey, other.APISecret)
		r = client.Do(http.MethodPost, "/v1/emails/"+other.AccountID+"/messages/"+receivedID+"/reply", map[string]any{"body": "mine?"}, otherHeaders...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodGet, "/v1/emails/"+other.AccountID+"/mailboxes/support.bot@mail.acme.test/messages", nil, otherHeaders...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodGet, base+"/mailboxes/support.bot@mail.acme.test/messages?cursor=nonsense", nil, headers...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
		api.stop(t)
	})
}

// closedDNS is a DNS server address on 127.0.0.1 where nothing listens:
// the SPF, DKIM and DMARC checks of the server under test ask it and get
// no answer at once, so that no query leaves the machine.
func closedDNS(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := c.LocalAddr().String()
	require.NoError(t, c.Close())
	return addr
}

// smtpListenAddr is the address the SMTP listener of a server started
// with --smtp-listen 127.0.0.1:0 listens on, as it logs it.
func smtpListenAddr(t *testing.T, api *serverProc) string {
	t.Helper()
	var addr string
	listening := regexp.MustCompile(`receiving email over SMTP.* addr=(\S+)`)
	require.Eventually(t, func() bool {
		m := listening.FindStringSubmatch(api.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 30*time.Second, 20*time.Millisecond, "the SMTP listener logs its address")
	return addr
}

// The built binary with a relay and the SMTP listener: an email the
// relay accepts reaches the webhook as email.sent, one it refuses as
// email.failed with its reply; a receiving server's delivery status
// notification about the sent one, delivered to the listener, makes it
// bounced and reaches the webhook as email.bounced with the recipient
// and the reason.
func TestEmailOutcomesReachTheWebhook(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		relay, err := smtptest.Start(smtptest.Options{OnData: func(m smtptest.Message) error {
			if slices.Contains(m.To, "refused@example.org") {
				return smtptest.Reply(550, "5.7.1", "Message refused by policy")
			}
			return nil
		}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = relay.Close() })
		hooks := newHookReceiver(t)
		b := setup(t, dialect)
		acct := b.createAccount(t, "Mailer")
		headers := auth(acct.APIKey, acct.APISecret)
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
		hooks.setSecret(t, hook.Secret)
		api := b.serve(t, "--email-domain", "mail.acme.test", "--smtp-listen", "127.0.0.1:0", "--smtp-url", relay.URL(),
			"--allow-private-urls", "127.0.0.1/32", "--smtp-dns", closedDNS(t))
		client := api.client(t)
		smtpAddr := smtpListenAddr(t, api)

		base := "/v1/emails/" + acct.AccountID
		r := client.Do(http.MethodPost, base+"/create-email", map[string]any{"address": "support.bot", "domain_name": "mail.acme.test"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		send := func(to string) map[string]any {
			r := client.Do(http.MethodPost, base+"/send", map[string]any{
				"sender_address": "support.bot@mail.acme.test", "recipient_address": to, "subject": "Your report", "body": "Hello",
			}, headers...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			return r.JSON(t)
		}
		sent, refused := send("nobody@example.org"), send("refused@example.org")

		ev := hooks.waitOne(t, "email.sent", sent["message_id"].(string))
		require.Equal(t, sent["email_id"], ev["email_id"])
		require.Equal(t, "sent", ev["status"])
		require.Equal(t, "nobody@example.org", ev["recipient_address"])
		require.Regexp(t, `^250 `, ev["smtp_reply"])
		ev = hooks.waitOne(t, "email.failed", refused["message_id"].(string))
		require.Equal(t, refused["email_id"], ev["email_id"])
		require.Equal(t, "failed", ev["status"])
		require.Equal(t, "rejected", ev["error_code"])
		require.Regexp(t, `^550 .*Message refused by policy`, ev["smtp_reply"])

		dsn := "From: Mail Delivery System <MAILER-DAEMON@mx.example.org>\r\nTo: support.bot@mail.acme.test\r\n" +
			"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <dsn-e2e@mx.example.org>\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: multipart/report; report-type=delivery-status; boundary=\"r\"\r\n\r\n" +
			"--r\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n" +
			"--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n" +
			"Final-Recipient: rfc822; nobody@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 User unknown\r\n" +
			"--r\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: support.bot@mail.acme.test\r\nTo: nobody@example.org\r\n" +
			"Subject: Your report\r\nMessage-ID: " + sent["message_id"].(string) + "\r\n--r--\r\n"
		require.NoError(t, smtp.SendMail(smtpAddr, nil, "", []string{"support.bot@mail.acme.test"}, []byte(dsn)))
		ev = hooks.waitOne(t, "email.bounced", sent["message_id"].(string))
		require.Equal(t, sent["email_id"], ev["email_id"])
		require.Equal(t, sent["thread_id"], ev["thread_id"])
		require.Equal(t, "bounced", ev["status"])
		require.Equal(t, "nobody@example.org", ev["recipient"])
		require.Equal(t, "550 5.1.1 User unknown", ev["reason"])
		r = client.Do(http.MethodGet, base+"/messages/"+sent["email_id"].(string), nil, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		details := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "bounced", details["status"])
		require.Equal(t, "bounced", details["error_code"])
		require.Equal(t, "nobody@example.org: 550 5.1.1 User unknown", details["smtp_reply"])
		api.stop(t)
	})
}

// Nothing answered 250 is lost across a crash: a server that runs no
// jobs (--jobs=false) accepts messages over SMTP and is killed with
// SIGKILL before any receive job ran; the server started again receives
// every one of them, and each reaches the webhook as email.received.
func TestAcceptedMailSurvivesAKill(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		var (
			mu       sync.Mutex
			received = map[string]bool{}
		)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var p map[string]any
			if json.NewDecoder(r.Body).Decode(&p) == nil && p["event"] == "email.received" {
				mu.Lock()
				received[p["subject"].(string)] = true
				mu.Unlock()
			}
		}))
		t.Cleanup(hook.Close)

		b := setup(t, dialect)
		acct := b.createAccount(t, "Crashes")
		headers := auth(acct.APIKey, acct.APISecret)
		args := []string{"--email-domain", "mail.acme.test", "--smtp-listen", "127.0.0.1:0", "--allow-private-urls", "127.0.0.1/32",
			"--smtp-dns", closedDNS(t)}
		api := b.serve(t, append(args, "--jobs=false")...)
		client := api.client(t)
		r := client.Do(http.MethodPut, "/v1/accounts/"+acct.AccountID+"/webhook", map[string]any{"url": hook.URL + "/hooks"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		r = client.Do(http.MethodPost, "/v1/emails/"+acct.AccountID+"/create-email", map[string]any{"address": "support.bot", "domain_name": "mail.acme.test"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		smtpAddr := smtpListenAddr(t, api)
		const messages = 5
		for i := range messages {
			msg := fmt.Sprintf("From: ann@example.org\r\nTo: support.bot@mail.acme.test\r\nSubject: before the crash %d\r\n"+
				"Message-ID: <crash-%d@example.org>\r\n\r\nHello %d\r\n", i, i, i)
			require.NoError(t, smtp.SendMail(smtpAddr, nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, []byte(msg)), "answered 250")
		}

		db, err := store.Open(context.Background(), b.dbURL, store.Options{})
		require.NoError(t, err)
		defer db.Close()
		var queued, emails int
		require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM jobs WHERE kind = 'email.receive' AND state = 'available'").Scan(context.Background(), &queued))
		require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM emails").Scan(context.Background(), &emails))
		require.Equal(t, messages, queued, "no receive job ran before the kill")
		require.Zero(t, emails)
		api.signal(t, syscall.SIGKILL)
		api.waitExit(t, exitTimeout)

		api = b.serve(t, args...)
		client = api.client(t)
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, "/v1/emails/"+acct.AccountID+"/mailboxes/support.bot@mail.acme.test/messages", nil, headers...)
			return r.StatusCode == http.StatusOK && len(r.JSON(t)["data"].([]any)) == messages
		}, 60*time.Second, 100*time.Millisecond, "every accepted message is received after the restart")
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(received) == messages
		}, 60*time.Second, 100*time.Millisecond, "each reaches the webhook")
		api.stop(t)
	})
}
