package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// fuzzedTools are the tools FuzzToolArguments calls: all but
// wait_for_message, whose arguments choose how long it waits.
var fuzzedTools = []string{
	"send_message", "list_threads", "get_messages", "manage_group", "send_email", "list_emails", "get_email", "reply_email",
	"create_cron_job", "list_cron_jobs", "pause_cron_job", "resume_cron_job", "delete_cron_job",
}

// noNetwork resolves no name and connects nowhere: the app under the
// fuzzer reaches no customer URL, whatever the arguments name.
type noNetwork struct{}

func (noNetwork) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

func (noNetwork) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the fuzzed app connects nowhere")
}

// FuzzToolArguments calls the tools with any JSON object as arguments, as
// a client would. Every call answers with a tool result, never a protocol
// error: a success whose text is its structured content, or an error that
// is the SDK's refusal of arguments its schema does not allow, or the
// adapter's error object with a code that is not internal_error.
func FuzzToolArguments(f *testing.F) {
	seeds := map[string][]string{
		"send_message": {`{"service":"whatsapp","from":"` + agentA + `","to":"` + userA + `","text":"hi"}`,
			`{"service":"whatsapp","from":"` + agentA + `","to":"` + userA + `","media":{"type":"image","url":"https://example.com/a.png","caption":"c"}}`,
			`{"from":"` + agentA + `","thread_id":"thr_x","text":"hi","idempotency_key":"k1"}`, `{"service":"sms"}`},
		"list_threads":    {`{}`, `{"limit":1,"offset":-1}`, `{"limit":1e300}`},
		"get_messages":    {`{"thread_id":"thr_1","limit":5,"before":"bTF8"}`, `{"thread_id":""}`},
		"manage_group":    {`{"action":"create","from":"` + agentA + `","name":"G","participants":["` + userA + `"]}`, `{"action":"rename","thread_id":"thr_x"}`},
		"send_email":      {`{"sender_address":"agent@example.com","recipient_address":"a@example.com","subject":"s","body":"b","headers":{"X-A":"1"},"cc":["c@example.com"]}`, `{"attachment_uri":"http://127.0.0.1/"}`},
		"list_emails":     {`{"mailbox":"agent@example.com","limit":5}`, `{"thread_id":"eth_x"}`, `{"cursor":"MTI6ZW1sX3g"}`},
		"get_email":       {`{"email_id":"eml_x"}`},
		"reply_email":     {`{"email_id":"eml_x","body":"b","cc":["c@example.com"],"headers":{"X-A":"1"}}`},
		"create_cron_job": {`{"endpoint_url":"https://example.com/hook","frequency":"custom","custom_schedule":"*/5 * * * *","timezone":"UTC","method":"POST","body":{"a":1}}`, `{"frequency":"weekly","day_of_week":9}`},
		"list_cron_jobs":  {`{"status":"paused","limit":100,"offset":0}`},
		"pause_cron_job":  {`{"job_id":"job_x"}`},
		"resume_cron_job": {`{"job_id":""}`},
		"delete_cron_job": {`{"job_id":"../x"}`},
	}
	for i, name := range fuzzedTools {
		for _, s := range seeds[name] {
			f.Add(uint8(i), []byte(s))
		}
	}
	cs := fuzzApp(f)
	f.Fuzz(func(t *testing.T, tool uint8, raw []byte) {
		var args map[string]any
		if json.Unmarshal(raw, &args) != nil || args == nil {
			return
		}
		name := fuzzedTools[int(tool)%len(fuzzedTools)]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s(%s): a protocol error: %v", name, raw, err)
		}
		body := text(res)
		if res.StructuredContent == nil {
			if !res.IsError || body == "" {
				t.Fatalf("%s(%s): a result without structured content: %+v", name, raw, res)
			}
			return // the SDK refused arguments its schema does not allow
		}
		structured, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		if !json.Valid([]byte(body)) || !jsonEqual(structured, []byte(body)) {
			t.Fatalf("%s(%s): the text %s is not the structured content %s", name, raw, body, structured)
		}
		if !res.IsError {
			return
		}
		var e toolError
		if json.Unmarshal(structured, &e) != nil || e.Status != "error" || e.Code == "" || e.Code == "internal_error" {
			t.Fatalf("%s(%s): the error %s", name, raw, structured)
		}
	})
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// fuzzApp starts the app on SQLite for the whole fuzz run, with an
// account that has a WhatsApp number and an HTTP guard that reaches
// nothing, and returns an MCP session of that account.
func fuzzApp(f *testing.F) *sdk.ClientSession {
	cfg := bootstrap.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.DatabaseURL = dbtest.URL(f, store.SQLite)
	cfg.SecretKey = strings.Repeat("ab", 32)
	cfg.LogLevel = 12 // quiet
	cfg.Limits = edge.Limits{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}
	var (
		ln  *edge.Listener
		acc *accounts.Service
	)
	app := fxtest.New(f, bootstrap.Options(cfg), fx.NopLogger, fx.Populate(&ln, &acc),
		fx.Decorate(func(*httpguard.Guard) *httpguard.Guard {
			return httpguard.New(httpguard.Options{Resolver: noNetwork{}, Dialer: noNetwork{}})
		}))
	app.RequireStart()
	f.Cleanup(app.RequireStop)

	ctx := context.Background()
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(f, err)
	_, err = acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: agentA, Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(f, err)
	c := credentials{accountID: a.ID, key: cred.Key, secret: cred.Secret}
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard-fuzz", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: "http://" + ln.Addr.String() + "/mcp", HTTPClient: &http.Client{Transport: withHeaders{c: c, next: http.DefaultTransport}}, MaxRetries: -1,
	}, nil)
	require.NoError(f, err)
	f.Cleanup(func() { _ = cs.Close() })
	return cs
}
