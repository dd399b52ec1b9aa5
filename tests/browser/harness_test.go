// Package browser drives the dashboard in Debian's Chromium, headless,
// through chromedp: the console as a person uses it, on the built binary.
//
// This file is the harness every browser test shares:
//
//   - TestMain builds the binary and starts one Chromium for the package
//     (it fails, naming the Debian package chromium, when the browser is
//     missing: these tests are part of `make test`, never skipped).
//   - startServer runs `switchboard serve` on 127.0.0.1 with a fresh
//     database, an account (through the CLI) and a sandbox number.
//   - newTab opens a browser context of its own per test (its own
//     cookies), records every alert (and dismisses it), every uncaught
//     exception and every Content-Security-Policy violation, and writes
//     a screenshot of the page into one temporary directory, logged, when
//     the test fails.
//   - The waits poll the page for a condition (an element, a text); no
//     test sleeps and then asserts.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/tests/e2ebinary"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

const (
	// waitTimeout bounds every wait for a condition of the page: long
	// enough for a loaded CI machine, short enough to fail a stuck test.
	waitTimeout = 30 * time.Second
	// startTimeout bounds a server's start.
	startTimeout = 30 * time.Second
	// cliTimeout bounds one CLI command.
	cliTimeout = 30 * time.Second
)

var (
	// binary is the switchboard executable under test.
	binary string
	// browserCtx has the package's running Chromium; tabs are its
	// children.
	browserCtx context.Context
	// shotDir collects the screenshots of failed tests.
	shotDir     string
	shotDirOnce sync.Once
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if _, err := os.Stat(chromiumPath); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the browser tests need Chromium at %s: install Debian's package chromium (apt-get install -y chromium): %v\n", chromiumPath, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "switchboard-browser-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if binary, err = e2ebinary.Path(filepath.Join("..", ".."), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	profile := filepath.Join(dir, "chromium-profile")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // as root, in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: start Chromium (%s; Debian's package chromium): %v\n", chromiumPath, err)
		return 1
	}
	browserCtx = ctx
	return m.Run()
}

// ---- the server ------------------------------------------------------

// server is a running `switchboard serve` with an account of its own.
type server struct {
	t    *testing.T
	URL  string
	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
	env  []string
	db   string
	// Account is the account the tests sign in as; Number its sandbox
	// WhatsApp number.
	Account account
	Number  string
}

type account struct {
	ID     string `json:"account_id"`
	KeyID  string `json:"key_id"`
	Name   string `json:"name"`
	Key    string `json:"api_key"`
	Secret string `json:"api_secret"`
}

// serverOptions change what startServer starts.
type serverOptions struct {
	// accountName is the account's name (default "Browser Tests").
	accountName string
	// dbURL is the database (default: a fresh SQLite file); env is given
	// to every process (e.g. SWITCHBOARD_SECRET_KEY for Postgres).
	dbURL string
	env   []string
	// args are more flags for serve.
	args []string
	// seed, when set, fills the database before the server starts (the
	// account and its number exist by then).
	seed func(t *testing.T, dbURL string, s *server)
}

// startServer starts the server on a fresh database with an account and
// a sandbox WhatsApp number, and waits until it listens.
func startServer(t *testing.T, o serverOptions) *server {
	t.Helper()
	if o.dbURL == "" {
		o.dbURL = dbtest.URL(t, store.SQLite)
	}
	if o.accountName == "" {
		o.accountName = "Browser Tests"
	}
	s := &server{t: t, env: o.env, db: o.dbURL, logs: newLogBuffer(), done: make(chan struct{}), Number: "+15550000001"}
	s.cliJSON(&s.Account, "accounts", "create", "--name", o.accountName)
	var n struct {
		Number string `json:"number"`
	}
	s.cliJSON(&n, "numbers", "add", "--account", s.Account.ID, "--number", s.Number, "--service", "whatsapp", "--provider", "sandbox")
	if o.seed != nil {
		o.seed(t, s.db, s)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", s.db}, o.args...)
	s.cmd = exec.Command(binary, args...)
	s.cmd.Dir = t.TempDir()
	s.cmd.Env = processEnv(o.env)
	s.cmd.Stdout = s.logs
	s.cmd.Stderr = s.logs
	s.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, s.cmd.Start())
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server output:\n%s", s.logs.String())
		}
	})
	select {
	case <-s.logs.listening:
		s.URL = s.logs.url()
	case <-s.done:
		t.Fatalf("the server exited before listening:\n%s", s.logs.String())
	case <-time.After(startTimeout):
		t.Fatalf("the server did not listen within %s:\n%s", startTimeout, s.logs.String())
	}
	return s
}

// cliJSON runs a CLI command on the server's database with --json and
// decodes its output into out.
func (s *server) cliJSON(out any, args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--database-url", s.db, "--json")...)
	cmd.Dir = s.t.TempDir()
	cmd.Env = processEnv(s.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(s.t, cmd.Run(), "switchboard %s: %s", strings.Join(args, " "), stderr.String())
	require.NoError(s.t, json.Unmarshal(stdout.Bytes(), out), "switchboard %s printed %s", strings.Join(args, " "), stdout.String())
}

// api calls the REST API as the account (with its key, not the
// browser's session) and returns the status and the decoded body.
// {account} in path is the account's id.
func (s *server) api(method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+strings.ReplaceAll(path, "{account}", s.Account.ID), rd)
	require.NoError(s.t, err)
	req.Header.Set("X-API-Key", s.Account.Key)
	req.Header.Set("X-API-Secret", s.Account.Secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(s.t, json.Unmarshal(raw, &out), "%s %s answered %d: %s", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, out
}

// mustAPI is api that requires a 2xx answer.
func (s *server) mustAPI(method, path string, body any) map[string]any {
	s.t.Helper()
	status, out := s.api(method, path, body)
	require.True(s.t, status >= 200 && status < 300, "%s %s answered %d: %v", method, path, status, out)
	return out
}

// inbound lets a user write to the sandbox number (the sandbox's
// simulated inbound message) and returns the API's answer.
func (s *server) inbound(from, senderName, text string) map[string]any {
	s.t.Helper()
	return s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/inbound", map[string]any{
		"service": "whatsapp", "from": from, "to": s.Number, "message": text, "sender_name": senderName,
	})
}

// processEnv is this process's environment without SWITCHBOARD_*
// variables, plus extra.
func processEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// logBuffer collects the server's output and sees its listening line.
type logBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	listening chan struct{}
	once      sync.Once
	found     string
}

var listeningLine = regexp.MustCompile(`msg=listening url=(\S+)\n`)

func newLogBuffer() *logBuffer { return &logBuffer{listening: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	m := listeningLine.FindSubmatch(b.buf.Bytes())
	b.mu.Unlock()
	if m != nil {
		b.once.Do(func() {
			b.mu.Lock()
			b.found = string(m[1])
			b.mu.Unlock()
			close(b.listening)
		})
	}
	return n, err
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) url() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.found
}

// ---- the browser -----------------------------------------------------

// tab is one test's browser: a browser context of its own (cookies
// included) with one page.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu sync.Mutex
	// dialogs are the messages of every alert, confirm or prompt the
	// page opened (each dismissed at once).
	dialogs []string
	// problems are uncaught exceptions and Content-Security-Policy
	// violations.
	problems []string
}

// openFirstThread opens a signed-in tab on the page of the account's most
// recently active thread, loaded.
func openFirstThread(t *testing.T, s *server) *tab {
	t.Helper()
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/threads")
	tb.waitReady()
	tb.click(".thread-list li:first-child a")
	tb.waitReady()
	return tb
}

// newTab opens a tab in a new browser context, on the server at base.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	tb := &tab{t: t, ctx: ctx, base: base}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, ev.Message)
			tb.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			text := m.String()
			if m.IsException() || strings.Contains(text, "Content Security Policy") || strings.Contains(text, "Content-Security-Policy") {
				tb.mu.Lock()
				tb.problems = append(tb.problems, fmt.Sprintf("%s (%s:%d)", text, m.URL, m.Line+1))
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot("failure")
			tb.mu.Lock()
			if len(tb.problems) > 0 {
				t.Logf("the page's exceptions and CSP violations:\n%s", strings.Join(tb.problems, "\n"))
			}
			tb.mu.Unlock()
		}
		cancel()
	})
	return tb
}

// screenshot writes a full-page PNG of the tab into the package's
// screenshot directory and logs its path.
func (tb *tab) screenshot(label string) {
	shotDirOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-browser-screenshots-")
		if err == nil {
			shotDir = dir
		}
	})
	if shotDir == "" {
		tb.t.Log("no screenshot directory")
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name()) + "-" + label + ".png"
	path := filepath.Join(shotDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	tb.t.Logf("screenshot of %s: %s", loc, path)
}

// do runs actions, each wait bounded by waitTimeout, failing the test
// on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("in the browser: %v", err)
	}
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](tb *tab, expression string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expression, err)
	}
	return v
}

// open loads a path of the server (e.g. "/dashboard/threads").
func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.base + path))
}

// waitFor waits until the JavaScript function fn (as source, called with
// args) returns a truthy value; what says what is awaited, for the
// failure message.
func (tb *tab) waitFor(what, fn string, args ...any) {
	tb.t.Helper()
	pollValue[chromedp.Void](tb, what, fn, args...)
}

// pollValue waits until the JavaScript function fn (called with args)
// returns a truthy value, and returns it.
func pollValue[T any](tb *tab, what, fn string, args ...any) T {
	tb.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ctx, cancel := context.WithDeadline(tb.ctx, deadline.Add(5*time.Second))
		v, err := chromedp.Run(ctx, chromedp.PollFunction[T](fn,
			chromedp.WithPollingArgs(args...), chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return v
		}
		// A navigation (a form posted, a redirect) ends the page the
		// poll ran in: poll the next one.
		if navigated(err) && time.Now().Before(deadline) {
			continue
		}
		tb.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// within reports whether the JavaScript function fn (called with args)
// returns a truthy value within d; unlike waitFor it does not fail the
// test, for waits that a test repeats after doing something again (a
// subscription starts when the server has processed it, which the
// protocol does not acknowledge).
func (tb *tab) within(d time.Duration, fn string, args ...any) bool {
	tb.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(tb.ctx, deadline.Add(5*time.Second))
		_, err := chromedp.Run(ctx, chromedp.PollFunction[chromedp.Void](fn,
			chromedp.WithPollingArgs(args...), chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return true
		}
		if !navigated(err) {
			break
		}
	}
	return false
}

// untilShown does something (send a message) until an element matching
// selector contains text, at most a dozen times, each given a few
// seconds: for what the page learns live.
func (tb *tab) untilShown(selector, text string, do func(i int)) {
	tb.t.Helper()
	for i := 0; i < 12; i++ {
		do(i)
		if tb.within(3*time.Second, `(sel, text) => [...document.querySelectorAll(sel)].some((el) => el.textContent.includes(text))`, selector, text) {
			return
		}
	}
	tb.t.Fatalf("%s never showed %q", selector, text)
}

// navigated reports whether err says the page went away under an action.
func navigated(err error) bool {
	msg := err.Error()
	for _, s := range []string{"navigated or closed", "Execution context was destroyed", "Cannot find context", "context with specified id"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// waitVisible waits until an element matching the CSS selector is shown.
func (tb *tab) waitVisible(selector string) {
	tb.t.Helper()
	tb.waitFor(selector+" to be visible", `(sel) => {
		const el = document.querySelector(sel);
		return !!el && !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
	}`, selector)
}

// waitText waits until an element matching selector contains text.
func (tb *tab) waitText(selector, text string) {
	tb.t.Helper()
	tb.waitFor(fmt.Sprintf("%s to contain %q", selector, text), `(sel, text) =>
		[...document.querySelectorAll(sel)].some((el) => el.textContent.includes(text))`, selector, text)
}

// waitReady waits until the console page has rendered (#app
// data-ready="true"), and fails if it rendered an error.
func (tb *tab) waitReady() {
	tb.t.Helper()
	state := pollValue[string](tb, "the page to render", `() => {
		const app = document.getElementById('app');
		return app && (app.dataset.ready === 'true' || app.dataset.ready === 'error') ? app.dataset.ready : null;
	}`)
	if state != "true" {
		tb.t.Fatalf("the page rendered an error: %s", eval[string](tb, `document.getElementById('app').innerText`))
	}
}

// waitPath waits until the tab shows the page at path (after a link or
// a form took it there).
func (tb *tab) waitPath(path string) {
	tb.t.Helper()
	tb.waitFor("the page "+path, `(p) => location.pathname === p && document.readyState !== 'loading'`, path)
}

// count is how many elements match a CSS selector.
func (tb *tab) count(selector string) int {
	tb.t.Helper()
	return eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(selector)))
}

// text is the textContent of the first element matching selector.
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ''}).textContent`, jsString(selector)))
}

// fill replaces the value of the field matching selector with value,
// typing it as a person would.
func (tb *tab) fill(selector, value string) {
	tb.t.Helper()
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(selector)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).value = ''`, jsString(selector))),
		chromedp.SendKeys(chromedp.CSS(selector), value),
	)
}

// click clicks the first element matching selector once it is visible.
func (tb *tab) click(selector string) {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.CSS(selector)), chromedp.Click(chromedp.CSS(selector)))
}

// clickText clicks the first button or link whose text is label.
func (tb *tab) clickText(label string) {
	tb.t.Helper()
	tb.waitFor(fmt.Sprintf("a button or link %q", label), `(label) =>
		[...document.querySelectorAll('button, a')].some((el) => el.textContent.trim() === label && !el.disabled)`, label)
	tb.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll('button, a')].find((el) => el.textContent.trim() === %s && !el.disabled).click()`, jsString(label))))
}

// viewport sets the page's width and height in CSS pixels.
func (tb *tab) viewport(width, height int64) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(width, height))
}

// requireNoHorizontalScroll fails when the page is wider than the
// viewport.
func (tb *tab) requireNoHorizontalScroll(where string) {
	tb.t.Helper()
	// Layout settles before the check.
	tb.do(chromedp.Evaluate[chromedp.Void](`new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))`, chromedp.EvalAwaitPromise))
	over := eval[[]string](tb, `(() => {
		const doc = document.documentElement;
		if (doc.scrollWidth <= doc.clientWidth) return [];
		// Name the widest offenders, for the failure message.
		return [...document.querySelectorAll('body *')]
			.filter((el) => el.getBoundingClientRect().right > doc.clientWidth + 1)
			.slice(0, 5)
			.map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).replace(/ +/g, '.') : '') + ' right=' + Math.round(el.getBoundingClientRect().right));
	})()`)
	if len(over) > 0 {
		width := eval[int](tb, `document.documentElement.clientWidth`)
		tb.t.Fatalf("%s scrolls sideways at %d px: %s", where, width, strings.Join(over, ", "))
	}
}

// signIn signs in on the sign-in page with key and secret.
func (tb *tab) signIn(key, secret string) {
	tb.t.Helper()
	tb.open("/dashboard/sign-in")
	tb.fill("#api_key", key)
	tb.fill("#api_secret", secret)
	tb.do(chromedp.Click(chromedp.CSS(`main.sign-in button[type="submit"]`)))
}

// signedIn signs in as the server's account and waits for the overview.
func (tb *tab) signedIn(s *server) {
	tb.t.Helper()
	tb.signIn(s.Account.Key, s.Account.Secret)
	tb.waitVisible("#app")
	tb.waitReady()
}

// dialogsSeen are the messages of the dialogs the page opened so far.
func (tb *tab) dialogsSeen() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.dialogs...)
}

// requireHealthy fails on any uncaught exception or CSP violation seen so
// far, and on any dialog.
func (tb *tab) requireHealthy() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.Empty(tb.t, tb.problems, "uncaught exceptions or Content-Security-Policy violations in the page")
	require.Empty(tb.t, tb.dialogs, "dialogs the page opened")
}

// evalVoid is an action that evaluates a JavaScript expression for its
// effect.
func evalVoid(expression string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](expression)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// path is the path of the tab's current URL.
func (tb *tab) path() string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(tb.t, err)
	u, err := url.Parse(loc)
	require.NoError(tb.t, err)
	return u.Path
}
