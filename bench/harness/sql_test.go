package harness

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	if got := Quote(`it's \\ fine`); got != `'it''s \\ fine'` {
		t.Errorf("Quote = %s", got)
	}
	if got := QuoteList([]string{"a", "b'c"}); got != `('a', 'b''c')` {
		t.Errorf("QuoteList = %s", got)
	}
	if got := QuoteList(nil); got != "(NULL)" {
		t.Errorf("QuoteList(nil) = %s, want a list that matches nothing", got)
	}
}

func TestOpenSQLRefusesSQLite(t *testing.T) {
	t.Parallel()
	if _, err := OpenSQL("sqlite:/tmp/bench.db"); err == nil {
		t.Error("OpenSQL opened a SQLite database")
	}
}

// sqlSession opens a session on $DATABASE_URL (scripts/with-postgres sets it).
func sqlSession(t *testing.T) *SQL {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Fatal("DATABASE_URL is not set: run with scripts/with-postgres (make test does)")
	}
	s, err := OpenSQL(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSQLSessionRunsScriptsAndQueries(t *testing.T) {
	t.Parallel()
	s := sqlSession(t)
	ctx := t.Context()
	// One session, one connection: a temporary table lives from call to call.
	if err := s.Exec(ctx, `CREATE TEMP TABLE t (id text PRIMARY KEY, n int, note text);
		BEGIN;
		INSERT INTO t SELECT 'r' || i, i, CASE WHEN i = 2 THEN NULL ELSE 'tab	and | bar' END FROM generate_series(1, 3) AS i;
		COMMIT;
		VACUUM t`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Int(ctx, "SELECT count(*) FROM t"); err != nil || n != 3 {
		t.Fatalf("count = %d, %v; want 3", n, err)
	}
	rows, err := s.Rows(ctx, "SELECT id, n FROM t ORDER BY n")
	if err != nil || len(rows) != 3 || !slices.Equal(rows[1], []string{"r2", "2"}) {
		t.Fatalf("rows = %q, %v", rows, err)
	}
	if ids, err := s.Column(ctx, "SELECT id FROM t WHERE id IN "+QuoteList([]string{"r1", "r3", "x"})+" ORDER BY id"); err != nil || !slices.Equal(ids, []string{"r1", "r3"}) {
		t.Fatalf("column = %q, %v", ids, err)
	}
	if none, err := s.Column(ctx, "SELECT id FROM t WHERE false"); err != nil || len(none) != 0 {
		t.Fatalf("no rows = %q, %v", none, err)
	}
	if v, err := s.String(ctx, "SELECT note FROM t WHERE id = 'r2'"); err != nil || v != "" {
		t.Fatalf("NULL = %q, %v; want empty", v, err)
	}
}

// A failing statement rolls its transaction back and ends psql; the next call
// runs in a fresh session, and says nothing of the last one's failure.
func TestSQLSessionRecoversFromErrors(t *testing.T) {
	t.Parallel()
	s := sqlSession(t)
	ctx := t.Context()
	err := s.Exec(ctx, "BEGIN; CREATE TEMP TABLE doomed (x int); SELECT no_such_column FROM doomed; COMMIT")
	if err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Fatalf("error %v, want one quoting Postgres's complaint", err)
	}
	if n, err := s.Int(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'doomed'"); err != nil || n != 0 {
		t.Fatalf("after the failure: %d, %v; want a working session without the table", n, err)
	}
	if _, err := s.Int(ctx, "SELECT 'x'"); err == nil {
		t.Error("Int of a string did not fail")
	}
}

func TestSQLSessionStopsAtCancel(t *testing.T) {
	t.Parallel()
	s := sqlSession(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Exec(ctx, "SELECT pg_sleep(30)"); err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("Exec of a long sleep: %v after %s, want the context's error at once", err, time.Since(start))
	}
	if n, err := s.Int(t.Context(), "SELECT 1"); err != nil || n != 1 {
		t.Fatalf("after the cancel: %d, %v", n, err)
	}
}

func TestRowDiffNamesDifferingColumns(t *testing.T) {
	t.Parallel()
	s := sqlSession(t)
	ctx := t.Context()
	if err := s.Exec(ctx, `CREATE TEMP TABLE e (id text, ref text, status text, created_at timestamptz);
		INSERT INTO e VALUES ('a1', '<a1@x>', 'queued', now()), ('b2', '<b2@x>', 'queued', now() - interval '1 hour'),
			('c3', '<c3@x>', 'sent', now())`); err != nil {
		t.Fatal(err)
	}
	row := func(id string) Row { return Row{From: "e", Where: "id = " + Quote(id), IDs: []string{id}} }
	if diff, err := s.RowDiff(ctx, row("a1"), row("b2"), "created_at"); err != nil || len(diff) != 0 {
		t.Errorf("a1 and b2 differ in %v (%v); want alike but for their ids and times", diff, err)
	}
	if diff, err := s.RowDiff(ctx, row("a1"), row("c3"), "created_at"); err != nil || !slices.Equal(diff, []string{"status"}) {
		t.Errorf("a1 and c3 differ in %v (%v); want status", diff, err)
	}
	if err := s.RowsAlike(ctx, "e", row("a1"), row("c3"), "created_at"); err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("RowsAlike = %v, want an error naming status", err)
	}
	if _, err := s.RowDiff(ctx, row("a1"), row("zz")); err == nil {
		t.Error("RowDiff compared with a missing row")
	}
}
