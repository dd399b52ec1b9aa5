package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

const (
	// cliTimeout bounds one CLI invocation; a hung command fails the test
	// instead of the whole package.
	cliTimeout = 30 * time.Second
	// startTimeout bounds how long a server may take to log its listening line.
	startTimeout = 20 * time.Second
	// exitTimeout bounds how long a server may take to exit after SIGTERM.
	exitTimeout = 10 * time.Second
)

// testBundle is one database and the configuration every process of a test
// shares to reach it.
type testBundle struct {
	dialect store.Dialect
	dbURL   string
	// env holds SWITCHBOARD_SECRET_KEY for Postgres. SQLite runs without
	// one, so the CLI and the server share the key file the binary generates
	// beside the database.
	env []string
	// bin is the executable the bundle's commands and servers run: the
	// binary under test unless set (see withBinary).
	bin string
}

// setup gives a test a fresh, migrated database of dialect.
func setup(t *testing.T, dialect store.Dialect) *testBundle {
	t.Helper()
	return newBundle(t, dialect, dbtest.URL(t, dialect))
}

// setupEmpty gives a test a fresh database without any table.
func setupEmpty(t *testing.T, dialect store.Dialect) *testBundle {
	t.Helper()
	return newBundle(t, dialect, dbtest.EmptyURL(t, dialect))
}

func newBundle(t *testing.T, dialect store.Dialect, dbURL string) *testBundle {
	t.Helper()
	b := &testBundle{dialect: dialect, dbURL: dbURL}
	if dialect == store.Postgres {
		b.env = []string{"SWITCHBOARD_SECRET_KEY=" + newSecretKey(t)}
	}
	return b
}

// withBinary is the bundle with its commands and servers run by the
// executable bin (another build of switchboard) instead.
func (b *testBundle) withBinary(bin string) *testBundle {
	c := *b
	c.bin = bin
	return &c
}

// executable is the binary the bundle runs.
func (b *testBundle) executable() string {
	if b.bin != "" {
		return b.bin
	}
	return binary
}

// cli runs the binary against the bundle's database (given by flag).
func (b *testBundle) cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBinaryIn(t, b.executable(), t.TempDir(), b.env, append(args, "--database-url", b.dbURL)...)
}

// cliJSON runs a command that must succeed with --json and decodes its output
// into out; it returns the raw output.
func (b *testBundle) cliJSON(t *testing.T, out any, args ...string) string {
	t.Helper()
	stdout, stderr, code := b.cli(t, append(args, "--json")...)
	require.Equal(t, 0, code, "switchboard %s: %s", strings.Join(args, " "), stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), out), "output of switchboard %s: %s", strings.Join(args, " "), stdout)
	return stdout
}

// serve starts the server on the bundle's database.
func (b *testBundle) serve(t *testing.T, args ...string) *serverProc {
	t.Helper()
	p := launchBinary(t, b.executable(), b.env, append([]string{"--database-url", b.dbURL}, args...)...)
	p.waitListening(t)
	return p
}

// createAccount creates an account through the CLI.
func (b *testBundle) createAccount(t *testing.T, name string) createdAccount {
	t.Helper()
	var a createdAccount
	b.cliJSON(t, &a, "accounts", "create", "--name", name)
	require.True(t, strings.HasPrefix(a.AccountID, "acc_"), "account id %q", a.AccountID)
	require.True(t, strings.HasPrefix(a.APIKey, "swk_"), "api key %q", a.APIKey)
	require.True(t, strings.HasPrefix(a.APISecret, "sws_"), "api secret %q", a.APISecret)
	return a
}

// addNumber adds a sandbox WhatsApp number through the CLI.
func (b *testBundle) addNumber(t *testing.T, accountID, e164 string) numberOut {
	t.Helper()
	var n numberOut
	b.cliJSON(t, &n, "numbers", "add", "--account", accountID, "--number", e164, "--service", "whatsapp", "--provider", "sandbox")
	require.True(t, strings.HasPrefix(n.NumberID, "num_"), "number id %q", n.NumberID)
	return n
}

// The CLI's --json outputs.
type (
	createdAccount struct {
		AccountID string `json:"account_id"`
		Name      string `json:"name"`
		KeyID     string `json:"key_id"`
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
		CreatedAt string `json:"created_at"`
	}
	listedAccount struct {
		AccountID string `json:"account_id"`
		Name      string `json:"name"`
		CreatedAt string `json:"created_at"`
	}
	issuedKey struct {
		KeyID     string `json:"key_id"`
		AccountID string `json:"account_id"`
		Label     string `json:"label"`
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
		CreatedAt string `json:"created_at"`
	}
	listedKey struct {
		KeyID     string `json:"key_id"`
		AccountID string `json:"account_id"`
		Label     string `json:"label"`
		KeyPrefix string `json:"key_prefix"`
		CreatedAt string `json:"created_at"`
		RevokedAt string `json:"revoked_at"`
	}
	numberOut struct {
		NumberID  string `json:"number_id"`
		AccountID string `json:"account_id"`
		Number    string `json:"number"`
		Service   string `json:"service"`
		Provider  string `json:"provider"`
		Enabled   bool   `json:"enabled"`
		CreatedAt string `json:"created_at"`
	}
	domainOut struct {
		DomainID  string `json:"domain_id"`
		AccountID string `json:"account_id"`
		Domain    string `json:"domain"`
		CreatedAt string `json:"created_at"`
	}
)

// auth returns the credential headers for openapitest.Client.Do.
func auth(key, secret string) []string { return []string{"X-API-Key", key, "X-API-Secret", secret} }

// newSecretKey returns a random server key: 64 hex characters.
func newSecretKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// processEnv is this process's environment without SWITCHBOARD_* variables
// (so a developer's own configuration cannot leak into the binary under
// test), plus extra.
func processEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			env = append(env, kv)
		}
	}
	// The suite runs many servers and clusters of three at once on one
	// Postgres (100 connections by default): each process's pool is
	// bounded unless the test sets its own (a flag or a later value wins).
	env = append(env, "SWITCHBOARD_DB_MAX_CONNS=4")
	return append(env, extra...)
}

// runCLI runs the binary to completion in a fresh working directory, with
// env ("NAME=value") added to a clean environment.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLIIn(t, t.TempDir(), env, args...)
}

// runCLIIn is runCLI in the working directory dir.
func runCLIIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBinaryIn(t, binary, dir, env, args...)
}

// runBinaryIn is runCLIIn with the executable bin.
func runBinaryIn(t *testing.T, bin, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = processEnv(env)
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("switchboard %s did not finish within %s\nstderr: %s", strings.Join(args, " "), cliTimeout, errOut.String())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run switchboard %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// requireOneLineError checks the contract of every failing command: exit
// code 1, nothing on stdout, and exactly one stderr line "switchboard: …".
// It returns the message after the prefix.
func requireOneLineError(t *testing.T, stdout, stderr string, code int) string {
	t.Helper()
	require.Equal(t, 1, code, "exit code (stderr: %q)", stderr)
	require.Empty(t, stdout, "stdout of a failing command")
	require.True(t, strings.HasSuffix(stderr, "\n") && strings.Count(stderr, "\n") == 1, "stderr must be exactly one line, got %q", stderr)
	msg, ok := strings.CutPrefix(strings.TrimSuffix(stderr, "\n"), "switchboard: ")
	require.True(t, ok, "stderr must start with %q, got %q", "switchboard: ", stderr)
	require.NotEmpty(t, strings.TrimSpace(msg), "error message")
	return msg
}

// serverProc is a running `switchboard serve`.
type serverProc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *logWatcher
	done   chan struct{} // closed once the process has exited
	code   int           // the exit code, once done is closed
	// URL is the base URL from the listening line ("http://127.0.0.1:PORT").
	URL string
}

// startServer runs `switchboard serve --addr 127.0.0.1:0 args...` with env
// added to a clean environment and waits until it logs its listening line.
// The process is killed when the test ends if it still runs.
func startServer(t *testing.T, env []string, args ...string) *serverProc {
	t.Helper()
	p := launchServer(t, env, args...)
	p.waitListening(t)
	return p
}

// launchServer starts the process without waiting for it to listen, so that
// several servers can start at once.
func launchServer(t *testing.T, env []string, args ...string) *serverProc {
	t.Helper()
	return launchBinary(t, binary, env, args...)
}

// launchBinary is launchServer with the executable bin.
func launchBinary(t *testing.T, bin string, env []string, args ...string) *serverProc {
	t.Helper()
	p := &serverProc{stdout: &syncBuffer{}, stderr: newLogWatcher(), done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = processEnv(env)
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("server %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// waitListening waits for the listening line and records the URL.
func (p *serverProc) waitListening(t *testing.T) {
	t.Helper()
	select {
	case <-p.stderr.listening:
		p.URL = p.stderr.url()
	case <-p.done:
		t.Fatalf("server exited with code %d before listening\nstderr:\n%s", p.code, p.stderr.String())
	case <-time.After(startTimeout):
		t.Fatalf("server did not log its listening line within %s\nstderr:\n%s", startTimeout, p.stderr.String())
	}
}

// waitReady waits until /readyz answers 200. A server listens once it
// reached its database; on a loaded machine its health watcher may still
// be connecting, and /readyz says 503 until it has.
func (p *serverProc) waitReady(t *testing.T) {
	t.Helper()
	c := p.client(t)
	var last openapitest.Response
	deadline := time.Now().Add(startTimeout)
	for {
		last = c.Do(http.MethodGet, "/readyz", nil)
		if last.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never said 200 within %s; last answer %d %s", startTimeout, last.StatusCode, last.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client returns a client that validates every response against the
// OpenAPI document.
func (p *serverProc) client(t *testing.T) *openapitest.Client {
	t.Helper()
	return openapitest.New(t, p.URL)
}

// signal sends sig to the server.
func (p *serverProc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// waitExit waits for the process to exit and returns its exit code.
func (p *serverProc) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("server did not exit within %s\nstderr:\n%s", timeout, p.stderr.String())
		return -1
	}
}

// stop sends SIGTERM and requires a clean exit (code 0) within exitTimeout.
func (p *serverProc) stop(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.waitExit(t, exitTimeout), "exit code after SIGTERM; stderr:\n%s", p.stderr.String())
}

// waitStdout waits until the server's stdout matches re and returns the
// submatches.
func (p *serverProc) waitStdout(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("server stdout does not match %s within %s:\n%s", re, startTimeout, p.stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// listeningLine is what the server logs once it accepts connections.
var listeningLine = regexp.MustCompile(`msg=listening url=(\S+)\n`)

// logWatcher collects the server's stderr and closes listening when the
// listening line has been written in full.
type logWatcher struct {
	syncBuffer
	listening chan struct{}
	once      sync.Once
	found     string
}

func newLogWatcher() *logWatcher { return &logWatcher{listening: make(chan struct{})} }

func (w *logWatcher) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if m := listeningLine.FindStringSubmatch(w.String()); m != nil {
		w.once.Do(func() {
			w.mu.Lock()
			w.found = m[1]
			w.mu.Unlock()
			close(w.listening)
		})
	}
	return n, err
}

func (w *logWatcher) url() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}

// sendValidated sends req with client and checks the response against the
// OpenAPI document, as openapitest.Client does, for the requests that
// client cannot make: over TLS with a private root, or with a body streamed
// while the request is in flight. body is the request body as sent, nil for
// none. It returns errors instead of failing, so it can run in a goroutine.
func sendValidated(client *http.Client, req *http.Request, body []byte) (openapitest.Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return openapitest.Response{}, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return openapitest.Response{}, fmt.Errorf("read response: %w", err)
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := openapitest.Validate(req, resp, respBody); err != nil {
		return openapitest.Response{}, fmt.Errorf("%s %s → %d does not match the OpenAPI document: %w\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, respBody)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		return openapitest.Response{}, fmt.Errorf("%s %s: response has no X-Request-Id", req.Method, req.URL.Path)
	}
	return openapitest.Response{Response: resp, Body: respBody}, nil
}

// accountData decodes the data of an AccountResponse.
func accountData(t *testing.T, r openapitest.Response) map[string]any {
	t.Helper()
	data, ok := r.JSON(t)["data"].(map[string]any)
	require.True(t, ok, "response has no data object: %s", r.Body)
	return data
}

// numbersOf returns the E.164 numbers of an account response's data.
func numbersOf(t *testing.T, data map[string]any) []string {
	t.Helper()
	list, ok := data["numbers"].([]any)
	require.True(t, ok, "data has no numbers list: %v", data)
	var out []string
	for _, n := range list {
		out = append(out, n.(map[string]any)["number"].(string))
	}
	return out
}

// postGraphQL posts query to a server's GraphQL endpoint as acct and
// decodes the answer into out.
func postGraphQL(t *testing.T, base string, acct createdAccount, query string, out any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", acct.APIKey)
	req.Header.Set("X-API-Secret", acct.APISecret)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.NoError(t, json.NewDecoder(res.Body).Decode(out))
}
