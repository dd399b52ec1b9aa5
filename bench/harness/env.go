package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// Env is what the scenarios of one run share: where the repository and scratch files
// are, which database to use, and the servers that stay up until Close. Servers and
// databases are started on first use and then reused, so every scenario measures
// warm, long-running processes.
type Env struct {
	// Root is the repository root, the directory holding go.mod.
	Root string
	// Dir is a scratch directory, removed by Close.
	Dir string
	// Database is "sqlite" or "postgres".
	Database string
	// PostgresAdminURL is where the run's Postgres database is created and dropped.
	PostgresAdminURL string
	// Workers is the number of concurrent workers of every HTTP load generator.
	Workers int
	// SwitchboardBin is a prebuilt switchboard binary; empty means build ./cmd/switchboard.
	SwitchboardBin string
	// Log receives progress and clean-up problems.
	Log *slog.Logger
	// Against, when set, is an Env of its own whose SwitchboardBin is another build:
	// each ratio scenario's baseline is then the same scenario set up in Against, so
	// the ratio compares two builds under one load, alternating as usual. Far less
	// noisy than two runs against pgbench, whose rate drifts apart from ours.
	Against *Env

	closers     []func()
	scoped      []func() // released when the running scenario ends
	hello       *Server
	pgURL       string
	switchboard *Switchboard
	sbErr       error
	builtBin    string
	buildErr    error
	followUps   []FollowUp // run after the running scenario's rounds
}

// NewEnv returns an Env with a fresh scratch directory. The caller sets the exported
// fields it needs and must call Close.
func NewEnv(root string, log *slog.Logger) (*Env, error) {
	dir, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench scratch dir: %w", err)
	}
	e := &Env{Root: root, Dir: dir, Database: "sqlite", Workers: 32, Log: log}
	e.onClose(func() { _ = os.RemoveAll(dir) })
	return e, nil
}

// Close releases what the last scenario left, stops the servers, drops the Postgres
// database and removes the scratch directory, in the reverse order they were set up.
func (e *Env) Close() {
	e.endScenario()
	for _, f := range slices.Backward(e.closers) {
		f()
	}
	e.closers = nil
}

func (e *Env) onClose(f func()) { e.closers = append(e.closers, f) }

// AfterScenario registers f to run when the scenario being set up ends, before the
// next one starts: for what only that scenario uses (its own database, its pools and
// workers), so it holds no connections or CPU while other scenarios measure. Like
// defer, the last registered runs first.
func (e *Env) AfterScenario(f func()) { e.scoped = append(e.scoped, f) }

// endScenario runs the functions registered with AfterScenario and forgets the
// follow-ups registered with AfterRounds.
func (e *Env) endScenario() {
	for _, f := range slices.Backward(e.scoped) {
		f()
	}
	e.scoped, e.followUps = nil, nil
}

// AfterRounds registers f to run once the rounds of the scenario being set up have
// succeeded, in the order registered (see FollowUp).
func (e *Env) AfterRounds(f FollowUp) { e.followUps = append(e.followUps, f) }

// asBaseline is sc set up in e, as the baseline of sc in another Env.
func (e *Env) asBaseline(sc Scenario) Baseline {
	return Baseline{
		Name: "switchboard " + filepath.Base(e.SwitchboardBin),
		Unit: sc.unit(),
		Setup: func(ctx context.Context, _ *Env) (Slice, error) {
			return sc.Setup(ctx, e)
		},
	}
}

// StartServer starts spec as its own process, waits until it is ready and stops it
// at Close.
func (e *Env) StartServer(ctx context.Context, spec ServerSpec) (*Server, error) {
	srv, err := startServer(ctx, spec)
	if err != nil {
		return nil, err
	}
	e.Log.Info("server ready", "name", spec.Name, "url", srv.URL)
	e.onClose(func() {
		if err := srv.Stop(); err != nil {
			e.Log.Warn("stop server", "name", spec.Name, "err", err)
		}
	})
	return srv, nil
}

// HTTPLoad returns a load generator with the run's number of workers.
func (e *Env) HTTPLoad(newRequest RequestFunc) *HTTPLoad {
	return NewHTTPLoad(e.Workers, newRequest)
}

// DatabaseURL returns the database URL the servers under test use: a SQLite file in
// the scratch directory, or the run's own Postgres database.
func (e *Env) DatabaseURL(ctx context.Context) (string, error) {
	if e.Database == "postgres" {
		return e.PostgresURL(ctx)
	}
	return "sqlite:" + filepath.Join(e.Dir, "bench.db"), nil
}

// PostgresURL creates a fresh database swb_bench_<random> on first use, so runs never
// see each other's rows, and drops it at Close.
func (e *Env) PostgresURL(ctx context.Context) (string, error) {
	if e.pgURL != "" {
		return e.pgURL, nil
	}
	url, drop, err := e.createPostgresDatabase(ctx)
	if err != nil {
		return "", err
	}
	e.onClose(drop)
	e.pgURL = url
	return url, nil
}

// ScenarioDatabaseURL returns the URL of a new, empty database of the run's kind for
// the scenario being set up alone: a fresh Postgres database, or a SQLite file in a
// fresh directory. It is dropped when the scenario ends (see AfterScenario); the
// caller migrates it and must close its pools first, which AfterScenario's
// last-in-first-out order gives when it registers their Close after this call.
func (e *Env) ScenarioDatabaseURL(ctx context.Context) (string, error) {
	if e.Database == "postgres" {
		url, drop, err := e.createPostgresDatabase(ctx)
		if err != nil {
			return "", err
		}
		e.AfterScenario(drop)
		return url, nil
	}
	dir, err := os.MkdirTemp(e.Dir, "scenario-")
	if err != nil {
		return "", fmt.Errorf("scenario database: %w", err)
	}
	e.AfterScenario(func() { _ = os.RemoveAll(dir) })
	return "sqlite:" + filepath.Join(dir, "bench.db"), nil
}

// createPostgresDatabase creates a database swb_bench_<random> next to
// PostgresAdminURL's and returns its URL and the function that drops it.
func (e *Env) createPostgresDatabase(ctx context.Context) (string, func(), error) {
	if _, err := exec.LookPath("psql"); err != nil {
		return "", nil, fmt.Errorf("create bench database: %w", err)
	}
	u, err := url.Parse(e.PostgresAdminURL)
	if err != nil {
		return "", nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := "swb_bench_" + randomHex(4)
	if err := psql(ctx, e.PostgresAdminURL, "create database "+name); err != nil {
		return "", nil, fmt.Errorf("create bench database: %w", err)
	}
	e.Log.Info("bench database created", "name", name)
	drop := func() {
		// A fresh context: the run's may already be cancelled by Ctrl-C.
		if err := psql(context.Background(), e.PostgresAdminURL, "drop database if exists "+name+" with (force)"); err != nil {
			e.Log.Warn("drop bench database", "name", name, "err", err)
		}
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// psql runs sql against url and fails on the first error.
func psql(ctx context.Context, url, sql string) error {
	cmd := exec.CommandContext(ctx, "psql", "-w", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("psql: %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// randomHex returns n random bytes as 2n hex characters.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
