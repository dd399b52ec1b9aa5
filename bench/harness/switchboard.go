package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
)

// Switchboard is the server under test, started once per run with one account whose
// credentials every scenario uses.
type Switchboard struct {
	// URL is the server's base URL.
	URL string
	// AccountID, APIKey and APISecret are the bench account's, from `accounts create`.
	AccountID string
	APIKey    string
	APISecret string
}

// Header returns the authentication headers of the bench account.
func (s *Switchboard) Header() http.Header {
	return http.Header{"X-Api-Key": {s.APIKey}, "X-Api-Secret": {s.APISecret}}
}

// Switchboard builds, migrates and starts the Switchboard server on first use and
// returns the same instance afterwards; a failure is remembered so each scenario that
// needs the server reports it without retrying a long build.
func (e *Env) Switchboard(ctx context.Context) (*Switchboard, error) {
	if e.switchboard == nil && e.sbErr == nil {
		e.switchboard, e.sbErr = e.startSwitchboard(ctx)
	}
	return e.switchboard, e.sbErr
}

func (e *Env) startSwitchboard(ctx context.Context) (*Switchboard, error) {
	bin := e.SwitchboardBin
	if bin == "" {
		bin = filepath.Join(e.Dir, "switchboard")
		e.Log.Info("building switchboard", "pkg", "./cmd/switchboard")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/switchboard")
		build.Dir = e.Root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build switchboard: %w\n%s", err, out)
		}
	}
	dbURL, err := e.DatabaseURL(ctx)
	if err != nil {
		return nil, err
	}
	vars := []string{
		"SWITCHBOARD_DATABASE_URL=" + dbURL,
		"SWITCHBOARD_SECRET_KEY=" + randomHex(32),
		"SWITCHBOARD_RATE_LIMIT=0",   // the per-account limiter would cap the measured rate
		"SWITCHBOARD_LOG_LEVEL=warn", // request logs stay off the hot path
	}
	if _, err := runTool(ctx, bin, vars, "migrate"); err != nil {
		return nil, err
	}
	out, err := runTool(ctx, bin, vars, "accounts", "create", "--name", "bench", "--json")
	if err != nil {
		return nil, err
	}
	sb, err := parseAccount(out)
	if err != nil {
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	srv, err := e.StartServer(ctx, ServerSpec{
		Name:      "switchboard",
		Args:      []string{bin, "serve", "--addr", addr},
		Env:       append(vars, "SWITCHBOARD_ADDR="+addr),
		Addr:      addr,
		ReadyPath: "/readyz",
	})
	if err != nil {
		return nil, err
	}
	sb.URL = srv.URL
	return sb, nil
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
	candidates := []string{string(out)}
	for line := range strings.Lines(string(out)) {
		candidates = append(candidates, line)
	}
	for _, c := range candidates {
		var a struct {
			AccountID string `json:"account_id"`
			APIKey    string `json:"api_key"`
			APISecret string `json:"api_secret"`
		}
		if json.Unmarshal([]byte(c), &a) == nil && a.AccountID != "" {
			return &Switchboard{AccountID: a.AccountID, APIKey: a.APIKey, APISecret: a.APISecret}, nil
		}
	}
	return nil, fmt.Errorf("accounts create: no JSON object with account_id in output:\n%s", lastLines(string(out), 10))
}
