package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// SQL is a psql session on one Postgres database: how the bench runs its own
// statements (seeding, counting, statistics), as its baselines run through pgbench,
// and never through the server's code. The bench knows the server's tables only as
// SQL: what a scenario writes is checked against what the server writes (see
// RowDiff), not against the server's Go types.
//
// One psql process serves every call, so that a count polled every few
// milliseconds costs a round trip, not a process and a connection. Calls are
// serialised. A statement that fails ends the process (ON_ERROR_STOP), which rolls
// back the transaction it was in; the next call starts another.
type SQL struct {
	url string

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	exited chan struct{}
}

// OpenSQL returns a session on the Postgres database at url. psql starts on first
// use; Close ends it.
func OpenSQL(url string) (*SQL, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, fmt.Errorf("the bench's SQL runs on Postgres only, not on %s", strings.SplitN(url, ":", 2)[0])
	}
	if _, err := exec.LookPath("psql"); err != nil {
		return nil, fmt.Errorf("the bench's SQL: %w", err)
	}
	return &SQL{url: url}, nil
}

// SQL opens a session on the deployment's database, closed when the scenario ends.
// It fails on SQLite, whose file the bench does not open: a scenario that seeds or
// counts with SQL is a Postgres scenario.
func (d *Deployment) SQL() (*SQL, error) {
	s, err := OpenSQL(d.DatabaseURL)
	if err != nil {
		return nil, err
	}
	d.env.AfterScenario(func() { _ = s.Close() })
	return s, nil
}

// sentinel marks the end of a call's output. No result row the bench reads looks
// like it.
const sentinel = "-- switchboard-bench: end of call --"

// start runs psql: quiet, unaligned tuples only, tab-separated, stopping at the
// first error, with no pager and no ~/.psqlrc.
func (s *SQL) start() error {
	cmd := exec.Command("psql", "-X", "-q", "-A", "-t", "-F", "\t", "-P", "pager=off",
		"-v", "ON_ERROR_STOP=1", "-d", s.url)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5", "PGAPPNAME=switchboard-bench")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	s.stderr = &tail{max: 8 << 10}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start psql: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.stdin, s.stdout, s.exited = cmd, stdin, bufio.NewReaderSize(stdout, 64<<10), exited
	return nil
}

// call sends script and returns the lines psql printed for it.
func (s *SQL) call(ctx context.Context, script string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	// A cancelled call ends the process: psql cannot be interrupted mid-statement
	// and then trusted to be where the next call expects it.
	stop := context.AfterFunc(ctx, func() { _ = s.cmd.Process.Kill() })
	defer stop()
	script = strings.TrimRight(script, " \t\n")
	if !strings.HasSuffix(script, ";") {
		script += ";"
	}
	var lines []string
	_, err := io.WriteString(s.stdin, script+"\n\\echo '"+sentinel+"'\n")
	for err == nil {
		var line string
		line, err = s.stdout.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		if err == nil && line == sentinel {
			return lines, nil
		}
		if err == nil {
			lines = append(lines, line)
		}
	}
	// psql is gone (an error stopped it, or ctx killed it): report why and start
	// afresh next time.
	s.closeLocked()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("psql: %s: %s", firstLine(script), strings.TrimSpace(lastLines(s.stderr.String(), 10)))
}

// Exec runs a script of statements, each in a transaction of its own unless the
// script has BEGIN and COMMIT, and ignores what they print. VACUUM may be among them.
func (s *SQL) Exec(ctx context.Context, script string) error {
	_, err := s.call(ctx, script)
	return err
}

// Rows runs a query and returns its rows, each as its columns' text (NULL as "").
func (s *SQL) Rows(ctx context.Context, query string) ([][]string, error) {
	lines, err := s.call(ctx, query)
	if err != nil {
		return nil, err
	}
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = strings.Split(l, "\t")
	}
	return rows, nil
}

// Column runs a query of one column and returns its values.
func (s *SQL) Column(ctx context.Context, query string) ([]string, error) {
	lines, err := s.call(ctx, query)
	if err != nil {
		return nil, err
	}
	return lines, nil
}

// Int runs a query that returns one integer, such as a count(*).
func (s *SQL) Int(ctx context.Context, query string) (int, error) {
	lines, err := s.call(ctx, query)
	if err != nil {
		return 0, err
	}
	if len(lines) != 1 {
		return 0, fmt.Errorf("%s: %d rows, want one integer", firstLine(query), len(lines))
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", firstLine(query), err)
	}
	return n, nil
}

// String runs a query that returns one value.
func (s *SQL) String(ctx context.Context, query string) (string, error) {
	lines, err := s.call(ctx, query)
	if err != nil {
		return "", err
	}
	if len(lines) != 1 {
		return "", fmt.Errorf("%s: %d rows, want one", firstLine(query), len(lines))
	}
	return lines[0], nil
}

// Close ends the session.
func (s *SQL) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	return nil
}

func (s *SQL) closeLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.stdin.Close() // psql exits at the end of its input
	<-s.exited
	s.cmd = nil
}

// Quote returns s as an SQL string literal (standard_conforming_strings, Postgres's
// default since 9.1).
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// QuoteList returns the values as a parenthesised list of SQL string literals, for
// IN; an empty list matches nothing.
func QuoteList(values []string) string {
	if len(values) == 0 {
		return "(NULL)"
	}
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = Quote(v)
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// Row names one row for RowDiff: the from-item it is read from (a table, or a
// subquery that adds columns), the condition that picks it, and the strings in it
// that are expected to differ from the other row's (its ids), each replaced in both
// rows by a placeholder before they are compared.
type Row struct {
	From  string
	Where string
	IDs   []string
	// Value, when set, is the JSON object compared instead of the whole row: an
	// expression of the row t, such as "t.payload::jsonb" for a column of JSON.
	Value string
}

// RowDiff compares two rows column by column (or the keys of their Values), each
// read as JSON with its IDs replaced by placeholders "$1", "$2" … in order, and
// returns the columns whose values differ, leaving out those in ignore (times,
// generated keys). It is how a
// scenario checks that the rows it seeds in bulk are the rows the server writes:
// one made through the API, one seeded, compared.
func (s *SQL) RowDiff(ctx context.Context, a, b Row, ignore ...string) ([]string, error) {
	side := func(r Row) string {
		j := "to_jsonb(t)::text"
		if r.Value != "" {
			j = "(" + r.Value + ")::text"
		}
		for i, id := range r.IDs {
			j = fmt.Sprintf("replace(%s, %s, %s)", j, Quote(id), Quote("$"+strconv.Itoa(i+1)))
		}
		return fmt.Sprintf("SELECT %s::jsonb AS j FROM %s AS t WHERE %s", j, r.From, r.Where)
	}
	q := fmt.Sprintf(`WITH a AS (%s), b AS (%s)
		SELECT 'rows: ' || (SELECT count(*) FROM a) || ' and ' || (SELECT count(*) FROM b)
		WHERE (SELECT count(*) FROM a) <> 1 OR (SELECT count(*) FROM b) <> 1
		UNION ALL
		SELECT coalesce(x.k, y.k) FROM (SELECT key AS k, value AS v FROM a, jsonb_each(a.j)) AS x
		FULL JOIN (SELECT key AS k, value AS v FROM b, jsonb_each(b.j)) AS y ON x.k = y.k
		WHERE x.v IS DISTINCT FROM y.v AND coalesce(x.k, y.k) NOT IN %s
		ORDER BY 1`, side(a), side(b), QuoteList(ignore))
	diff, err := s.Column(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(diff) > 0 && strings.HasPrefix(diff[0], "rows: ") {
		return nil, fmt.Errorf("compare %s rows: want one each, have %s", a.From, strings.TrimPrefix(diff[0], "rows: "))
	}
	return diff, nil
}

// RowsAlike returns an error naming the differing columns when RowDiff finds any.
func (s *SQL) RowsAlike(ctx context.Context, what string, a, b Row, ignore ...string) error {
	diff, err := s.RowDiff(ctx, a, b, ignore...)
	if err != nil {
		return err
	}
	if len(diff) > 0 {
		return fmt.Errorf("%s: the seeded row differs from the server's in %s; update the seeding SQL", what, strings.Join(diff, ", "))
	}
	return nil
}

// firstLine is the first line of a statement, for error messages.
func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if line, _, ok := strings.Cut(q, "\n"); ok {
		return line + " …"
	}
	return q
}
