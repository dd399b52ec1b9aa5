// Package dbtest gives tests a fresh, migrated database of either dialect.
// SQLite databases are files in the test's temp dir. Postgres databases are
// created from a migrated template (one per migration set), so each test
// gets an empty schema in tens of milliseconds and tests never share rows.
// Postgres is $DATABASE_URL, else the local default; when it cannot be
// reached the test fails, it never skips (make test provides a server).
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// DefaultPostgresURL is used when DATABASE_URL is unset: the server every
// development machine of this project runs.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Dialects lists every dialect, for tests that run against each.
var Dialects = []store.Dialect{store.SQLite, store.Postgres}

// Open returns a fresh migrated database, closed and removed on cleanup.
func Open(t testing.TB, dialect store.Dialect) *store.DB {
	t.Helper()
	return OpenWith(t, dialect, store.Options{})
}

// OpenWith is Open with opts.
func OpenWith(t testing.TB, dialect store.Dialect, opts store.Options) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), URL(t, dialect), opts)
	if err != nil {
		t.Fatalf("open %s test database: %v", dialect, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// URL returns the URL of a fresh migrated database, removed on cleanup; for
// tests that start the service or the CLI as a process.
func URL(t testing.TB, dialect store.Dialect) string {
	t.Helper()
	switch dialect {
	case store.SQLite:
		return freshSQLite(t)
	case store.Postgres:
		return freshPostgres(t)
	}
	t.Fatalf("unknown dialect %q", dialect)
	return ""
}

// EmptyURL returns the URL of a fresh database with no tables at all, for
// tests of migration itself.
func EmptyURL(t testing.TB, dialect store.Dialect) string {
	t.Helper()
	if dialect == store.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "empty.db")
	}
	return createDatabase(t, "")
}

// PostgresURL is the server tests use.
func PostgresURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

var (
	sqliteOnce     sync.Once
	sqliteTemplate []byte
	sqliteErr      error
)

// freshSQLite copies a migrated database file, made once per test
// process, into the test's temp dir: migrating each test's file anew was
// a good part of the suite's time.
func freshSQLite(t testing.TB) string {
	t.Helper()
	sqliteOnce.Do(func() { sqliteTemplate, sqliteErr = migratedSQLite() })
	if sqliteErr != nil {
		t.Fatalf("migrate sqlite: %v", sqliteErr)
	}
	path := filepath.Join(t.TempDir(), "test.db")
	if err := os.WriteFile(path, sqliteTemplate, 0o600); err != nil {
		t.Fatalf("copy sqlite template: %v", err)
	}
	return "sqlite:" + path
}

// migratedSQLite returns the bytes of a freshly migrated, closed database.
func migratedSQLite() ([]byte, error) {
	dir, err := os.MkdirTemp("", "swb-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	db, err := store.Open(context.Background(), "sqlite:"+path, store.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Closing checkpoints the write-ahead log into the file.
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("the template's write-ahead log outlived its close")
	}
	return os.ReadFile(path)
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

func freshPostgres(t testing.TB) string {
	t.Helper()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate() })
	if templateErr != nil {
		t.Fatalf("postgres at %s is not usable for tests (make test starts one): %v", PostgresURL(), templateErr)
	}
	return createDatabase(t, templateName)
}

// createDatabase makes a uniquely named database, optionally from a
// template, and drops it when the test ends.
func createDatabase(t testing.TB, template string) string {
	t.Helper()
	admin := adminDB()
	name := "swb_t_" + randomHex(8)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		// Creating from a template fails while anything else is connected to
		// the template; that is brief, so retry.
		if _, err = admin.Exec(stmt); err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create test database (is postgres at %s running? make test starts one): %v", PostgresURL(), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(PostgresURL(), name)
}

var (
	adminOnce sync.Once
	admin     *sql.DB
)

// adminDB is a small pool on the configured database, used only to create
// and drop test databases. Its replies may take long: a server busy with
// the whole suite took over ten seconds (pgdriver's default read timeout)
// to create one database, and pgdriver keeps a connection whose read timed
// out, so that the next statement would read the late reply.
func adminDB() *sql.DB {
	adminOnce.Do(func() {
		admin = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(PostgresURL()),
			pgdriver.WithDialTimeout(5*time.Second), pgdriver.WithReadTimeout(3*time.Minute)))
		admin.SetMaxOpenConns(4)
	})
	return admin
}

// ensureTemplate creates and migrates the template for the current
// migration set, once per server: concurrent test processes serialise on an
// advisory lock, and templates of older migration sets are dropped.
func ensureTemplate() (string, error) {
	sum, err := migrationsDigest()
	if err != nil {
		return "", err
	}
	name := "swb_tmpl_" + sum
	ctx := context.Background()
	conn, err := adminDB().Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7283542)"); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, "SELECT pg_advisory_unlock(7283542)") //nolint:errcheck // the session ends right after

	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Templates of other migration sets may belong to test processes of
	// other checkouts running now, so only the oldest beyond the newest
	// few are dropped, and never by force.
	rows, err := conn.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'swb\_tmpl\_%' AND datname NOT LIKE '%\_new' ORDER BY oid DESC OFFSET 16`)
	if err != nil {
		return "", err
	}
	var stale []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return "", err
		}
		stale = append(stale, s)
	}
	rows.Close()
	for _, s := range stale {
		_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+s)
	}
	building := name + "_new"
	_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	db, err := store.Open(ctx, withDatabase(PostgresURL(), building), store.Options{MaxConns: 2})
	if err != nil {
		return "", err
	}
	_, err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	// Renaming last means a template that exists is always complete, even if
	// a test process died while building one.
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

// migrationsDigest names the migration set, so a changed migration gets a
// new template instead of a stale one.
func migrationsDigest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(store.MigrationFiles(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(store.MigrationFiles(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ForEachDialect runs test once per database in Dialects, each in a
// parallel subtest named after its dialect.
func ForEachDialect(t *testing.T, test func(t *testing.T, dialect store.Dialect)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			test(t, d)
		})
	}
}
