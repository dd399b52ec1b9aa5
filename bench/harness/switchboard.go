package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Switchboard is a running Switchboard server and the bench account every request
// uses.
type Switchboard struct {
	// URL is the server's base URL.
	URL string
	// AccountID, APIKey and APISecret are the bench account's, from `accounts create`.
	AccountID string
	APIKey    string
	APISecret string

	srv *Server
}

// Header returns the authentication headers of the bench account.
func (s *Switchboard) Header() http.Header {
	return http.Header{"X-Api-Key": {s.APIKey}, "X-Api-Secret": {s.APISecret}}
}

// PID is the server's process id.
func (s *Switchboard) PID() int { return s.srv.PID() }

// Stop stops the server; stopping a stopped server does nothing.
func (s *Switchboard) Stop() error { return s.srv.Stop() }

// Switchboard builds, migrates and starts the Switchboard server on first use and
// returns the same instance afterwards; a failure is remembered so each scenario that
// needs the server reports it without retrying a long build. It runs on the run's
// database (see Env.DatabaseURL) with the serve command's defaults and is stopped at
// Close.
func (e *Env) Switchboard(ctx context.Context) (*Switchboard, error) {
	if e.switchboard == nil && e.sbErr == nil {
		e.switchboard, e.sbErr = e.startSwitchboard(ctx)
	}
	return e.switchboard, e.sbErr
}

func (e *Env) startSwitchboard(ctx context.Context) (*Switchboard, error) {
	dbURL, err := e.DatabaseURL(ctx)
	if err != nil {
		return nil, err
	}
	d, err := e.provision(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	sb, err := d.start(ctx, nil)
	if err != nil {
		return nil, err
	}
	e.Log.Info("server ready", "name", "switchboard", "url", sb.URL)
	e.onClose(func() {
		if err := sb.Stop(); err != nil {
			e.Log.Warn("stop server", "name", "switchboard", "err", err)
		}
	})
	return sb, nil
}

// Deployment is a Switchboard database the harness provisioned: migrated, with the
// bench account. Servers started on it with Serve share it as replicas do, and
// Command runs the operator CLI on it.
type Deployment struct {
	// DatabaseURL is the deployment's database.
	DatabaseURL string
	// SecretKey is the server key (hex) its servers and commands run with, from which
	// the sealed provider settings of its numbers are derived.
	SecretKey string
	// AccountID, APIKey and APISecret are the bench account's.
	AccountID string
	APIKey    string
	APISecret string

	env  *Env
	bin  string
	vars []string
}

// NewDeployment provisions a deployment on a new database of the run's kind for the
// scenario being set up alone (see ScenarioDatabaseURL); servers started with Serve
// and the database go when the scenario ends. The switchboard binary is built once
// per run.
func (e *Env) NewDeployment(ctx context.Context) (*Deployment, error) {
	dbURL, err := e.ScenarioDatabaseURL(ctx)
	if err != nil {
		return nil, err
	}
	return e.provision(ctx, dbURL)
}

// provision migrates dbURL and creates the bench account on it.
func (e *Env) provision(ctx context.Context, dbURL string) (*Deployment, error) {
	bin, err := e.switchboardBinary(ctx)
	if err != nil {
		return nil, err
	}
	key := randomHex(32)
	d := &Deployment{DatabaseURL: dbURL, SecretKey: key, env: e, bin: bin, vars: []string{
		"SWITCHBOARD_DATABASE_URL=" + dbURL,
		"SWITCHBOARD_SECRET_KEY=" + key,
		// The per-account limiter would cap the measured rate; BENCH_RATE_LIMIT
		// sets one high enough to measure what the limiter itself costs.
		"SWITCHBOARD_RATE_LIMIT=" + cmp.Or(os.Getenv("BENCH_RATE_LIMIT"), "0"),
		"SWITCHBOARD_LOG_LEVEL=warn", // request logs stay off the hot path
	}}
	if _, err := d.Command(ctx, "migrate"); err != nil {
		return nil, err
	}
	out, err := d.Command(ctx, "accounts", "create", "--name", "bench", "--json")
	if err != nil {
		return nil, err
	}
	acct, err := parseAccount(out)
	if err != nil {
		return nil, err
	}
	d.AccountID, d.APIKey, d.APISecret = acct.AccountID, acct.APIKey, acct.APISecret
	return d, nil
}

// switchboardBinary returns SwitchboardBin, or builds ./cmd/switchboard once per run.
func (e *Env) switchboardBinary(ctx context.Context) (string, error) {
	if e.SwitchboardBin != "" {
		return e.SwitchboardBin, nil
	}
	if e.builtBin == "" && e.buildErr == nil {
		bin := filepath.Join(e.Dir, "switchboard")
		e.Log.Info("building switchboard", "pkg", "./cmd/switchboard")
		if e.buildErr = BuildSwitchboard(ctx, e.Root, bin); e.buildErr == nil {
			e.builtBin = bin
		}
	}
	return e.builtBin, e.buildErr
}

// BuildSwitchboard builds ./cmd/switchboard of the repository at root into bin.
func BuildSwitchboard(ctx context.Context, root, bin string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/switchboard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build switchboard: %w\n%s", err, out)
	}
	return nil
}

// FindRoot walks up from the working directory to the directory holding go.mod,
// the repository's root.
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find repository root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Command runs one switchboard CLI command on the deployment and returns its
// standard output.
func (d *Deployment) Command(ctx context.Context, args ...string) ([]byte, error) {
	return runTool(ctx, d.bin, d.vars, args...)
}

// Account is an account of a deployment and its API credentials.
type Account struct {
	AccountID string
	APIKey    string
	APISecret string
}

// Header returns the account's authentication headers.
func (a Account) Header() http.Header {
	return http.Header{"X-Api-Key": {a.APIKey}, "X-Api-Secret": {a.APISecret}}
}

// AddAccount creates another account on the deployment with `accounts create
// --json`, for scenarios with more than one tenant.
func (d *Deployment) AddAccount(ctx context.Context, name string) (Account, error) {
	out, err := d.Command(ctx, "accounts", "create", "--name", name, "--json")
	if err != nil {
		return Account{}, err
	}
	a, err := parseAccount(out)
	if err != nil {
		return Account{}, err
	}
	return Account{AccountID: a.AccountID, APIKey: a.APIKey, APISecret: a.APISecret}, nil
}

// AddNumber adds an enabled agent number to the bench account with `numbers add
// --json` and returns its id.
func (d *Deployment) AddNumber(ctx context.Context, number, service, provider string) (string, error) {
	return d.AddNumberTo(ctx, d.AccountID, number, service, provider)
}

// AddNumberTo adds an enabled agent number to accountID, as AddNumber does.
func (d *Deployment) AddNumberTo(ctx context.Context, accountID, number, service, provider string) (string, error) {
	out, err := d.Command(ctx, "numbers", "add", "--account", accountID, "--number", number,
		"--service", service, "--provider", provider, "--json")
	if err != nil {
		return "", err
	}
	var n struct {
		NumberID string `json:"number_id"`
	}
	if !jsonOutput(out, &n, func() bool { return n.NumberID != "" }) {
		return "", fmt.Errorf("numbers add: no JSON object with number_id in output:\n%s", lastLines(string(out), 10))
	}
	return n.NumberID, nil
}

// AddNumbers adds enabled agent numbers to the bench account as AddNumber does, a
// few commands at a time: a command costs a process start and a connection, about
// a tenth of a CPU second, so a scenario adds hundreds of numbers in tens of seconds
// (untimed). The numbers' provider settings are sealed with the server key, bound
// to each number's id, which is why the bench cannot copy them in SQL.
func (d *Deployment) AddNumbers(ctx context.Context, numbers []string, service, provider string) error {
	return ForEach(ctx, 4, numbers, func(ctx context.Context, n string) error {
		_, err := d.AddNumber(ctx, n, service, provider)
		return err
	})
}

// SetWebhook points the webhook of accountID (one of the deployment's accounts)
// at url with `switchboard webhook set`, allowing the loopback addresses the
// bench's receivers listen on.
func (d *Deployment) SetWebhook(ctx context.Context, accountID, url string) error {
	_, err := d.Command(ctx, append([]string{"webhook", "set", "--account", accountID, "--url", url}, AllowLoopback...)...)
	return err
}

// AllowLoopback is the flag that lets a server and the webhook command reach the
// bench's receivers on 127.0.0.1 over plain http.
var AllowLoopback = []string{"--allow-private-urls", "127.0.0.1/32"}

// Serve starts `switchboard serve` on the deployment with flags added to the
// harness's (e.g. "--jobs=false") and waits until it is ready. The server is
// stopped when the scenario ends, or earlier with Stop.
func (d *Deployment) Serve(ctx context.Context, flags ...string) (*Switchboard, error) {
	sb, err := d.start(ctx, flags)
	if err != nil {
		return nil, err
	}
	d.env.Log.Debug("server ready", "name", "switchboard", "url", sb.URL, "flags", flags)
	d.env.AfterScenario(func() {
		if err := sb.Stop(); err != nil {
			d.env.Log.Warn("stop server", "name", "switchboard", "err", err)
		}
	})
	return sb, nil
}

func (d *Deployment) start(ctx context.Context, flags []string) (*Switchboard, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, ServerSpec{
		Name:      "switchboard",
		Args:      append([]string{d.bin, "serve", "--addr", addr}, flags...),
		Env:       append(d.vars, "SWITCHBOARD_ADDR="+addr),
		Addr:      addr,
		ReadyPath: "/readyz",
	})
	if err != nil {
		return nil, err
	}
	return &Switchboard{URL: srv.URL, AccountID: d.AccountID, APIKey: d.APIKey, APISecret: d.APISecret, srv: srv}, nil
}

// runTool runs one switchboard CLI command and returns its standard output.
func runTool(ctx context.Context, bin string, vars []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cmd.Environ(), vars...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("switchboard %s: %w\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), 30))
	}
	return out, nil
}

// parseAccount finds the JSON object `accounts create --json` prints, whether it is
// the whole output (compact or indented) or one line among log lines.
func parseAccount(out []byte) (*Switchboard, error) {
	var a struct {
		AccountID string `json:"account_id"`
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	if !jsonOutput(out, &a, func() bool { return a.AccountID != "" }) {
		return nil, fmt.Errorf("accounts create: no JSON object with account_id in output:\n%s", lastLines(string(out), 10))
	}
	return &Switchboard{AccountID: a.AccountID, APIKey: a.APIKey, APISecret: a.APISecret}, nil
}

// jsonOutput decodes into v the JSON object a --json command printed, whether it is
// the whole output (compact or indented) or one line among log lines, and reports
// whether complete, which checks the fields the caller needs, holds for it.
func jsonOutput(out []byte, v any, complete func() bool) bool {
	candidates := []string{string(out)}
	for line := range strings.Lines(string(out)) {
		candidates = append(candidates, line)
	}
	for _, c := range candidates {
		if json.Unmarshal([]byte(c), v) == nil && complete() {
			return true
		}
	}
	return false
}
