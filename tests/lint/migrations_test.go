package lint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Migrations are expand-then-contract (docs/upgrading.md): during a
// rolling upgrade the previous build serves on the schema the next build
// migrated, so a migration may only add to what the previous build reads
// and writes. This file checks every migration of both dialects:
//
//   - Dropping or renaming a table or a column, or changing a column's
//     type (a contract), needs a marker in the file naming what goes and
//     the commit from which no code reads it, an ancestor of HEAD:
//     "-- contract: threads.recent_at unused since 1a2b3c4d". The code
//     stops reading it in one release; the contract ships in a later one.
//   - A column added NOT NULL needs a DEFAULT: the previous build's
//     INSERTs leave it out.
//   - On Postgres an index on a table that exists already is built with
//     CREATE INDEX CONCURRENTLY (a plain CREATE INDEX blocks the table's
//     writes while it builds), in a migration without the .tx suffix
//     (CONCURRENTLY refuses a transaction), one statement per --bun:split
//     chunk (Postgres runs the statements of one query in one
//     transaction).
//
// Migrations that shipped before the rule and break it are listed in
// migrationAllowList, each with its reason.

// migrationsDir is the migrations' directory from this package.
const migrationsDir = "../../adapters/store/migrations"

// The rules a migration can break.
const (
	ruleContract     = "contract"
	ruleNotNull      = "not-null-without-default"
	ruleIndex        = "index-not-concurrent"
	ruleConcurrently = "concurrently-in-transaction"
	ruleMarker       = "contract-marker"
)

// migrationAllowList names, by "dialect/file rule", the migrations that
// shipped before the rule and break it, with the reason each is kept.
var migrationAllowList = map[string]string{
	"postgres/20261125000016_idempotency_responses.tx.up.sql contract": "shipped before rolling upgrades were supported: the answers moved from idempotency_keys to idempotency_responses in one step (commit 32f960da)",
	"sqlite/20261125000016_idempotency_responses.tx.up.sql contract":   "shipped before rolling upgrades were supported (SQLite serves one process: it is never rolled)",

	"postgres/20261122000004_groups_events.tx.up.sql index-not-concurrent":             "threads index built before the rule, with the tables of the first release still empty",
	"postgres/20261122000009_channels.tx.up.sql index-not-concurrent":                  "messages index built before the rule, with the tables of the first release still empty",
	"postgres/20261125000015_cron_leases.tx.up.sql index-not-concurrent":               "cron_executions index built before the rule (pre-release data sizes)",
	"postgres/20261125000017_credentials_revoked_index.tx.up.sql index-not-concurrent": "credentials index built before the rule (one row per API key)",
	"postgres/20261125000018_rate_buckets.tx.up.sql index-not-concurrent":              "rate_buckets index built before the rule (rows live for seconds)",
	"postgres/20261125000019_jobs_account_endpoint.tx.up.sql index-not-concurrent":     "jobs index built before the rule (pre-release data sizes)",
	"postgres/20261126000021_emails_account.tx.up.sql index-not-concurrent":            "emails index built before the rule (pre-release data sizes)",
	"postgres/20261126000022_threads_activity.tx.up.sql index-not-concurrent":          "threads index built before the rule (pre-release data sizes)",
	"postgres/20261129000401_contacts.tx.up.sql index-not-concurrent":                  "threads index built before the rule (pre-release data sizes)",
	"postgres/20261129000900_inbound_email.tx.up.sql index-not-concurrent":             "emails indexes built before the rule (pre-release data sizes)",
	"postgres/20261129001000_web_ui_messages.tx.up.sql index-not-concurrent":           "messages index built before the rule (pre-release data sizes)",
	"postgres/20261129001200_history_retention.tx.up.sql index-not-concurrent":         "webhook_deliveries and cron_executions indexes built before the rule (pre-release data sizes)",
	"postgres/20261129001300_email_inbox.tx.up.sql index-not-concurrent":               "emails index built before the rule (pre-release data sizes)",
	"postgres/20261130000600_email_spool_account.tx.up.sql index-not-concurrent":       "email_spool index built before the rule (the spool holds mail only until it is parsed)",
}

// Every migration of both dialects keeps to the rules, or is on the
// allow-list; no entry of the allow-list is stale.
func TestMigrationsAreExpandOnly(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(migrationsDir, "*", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "the migrations are in %s", migrationsDir)
	used := map[string]bool{}
	var problems []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		dialect, name := filepath.Base(filepath.Dir(f)), filepath.Base(f)
		for _, p := range checkMigration(dialect, name, string(text), gitAncestor) {
			key := dialect + "/" + name + " " + p.rule
			if _, ok := migrationAllowList[key]; ok {
				used[key] = true
				continue
			}
			problems = append(problems, p.String())
		}
	}
	if len(problems) > 0 {
		t.Fatalf("migrations must be expand-only (docs/upgrading.md):\n%s", strings.Join(problems, "\n"))
	}
	for key := range migrationAllowList {
		require.True(t, used[key], "the allow-list entry %q allows nothing: delete it", key)
	}
}

// gitAncestor checks that commit names a commit of this clone that is an
// ancestor of HEAD (or HEAD itself).
func gitAncestor(commit string) error {
	if err := exec.Command("git", "-C", "../..", "rev-parse", "--verify", "--quiet", commit+"^{commit}").Run(); err != nil {
		return fmt.Errorf("%s is not a commit of this clone (a shallow clone? git fetch --unshallow)", commit)
	}
	if err := exec.Command("git", "-C", "../..", "merge-base", "--is-ancestor", commit, "HEAD").Run(); err != nil {
		return fmt.Errorf("%s is not an ancestor of HEAD", commit)
	}
	return nil
}

// The checker on migrations written here: each bad one breaks its rule,
// each good one none.
func TestMigrationChecker(t *testing.T) {
	t.Parallel()
	known := func(commit string) error {
		if commit == "1a2b3c4d" {
			return nil
		}
		return fmt.Errorf("%s is not a commit of this clone", commit)
	}
	cases := []struct {
		name, dialect, file, sql string
		want                     []string // the rules broken, sorted
	}{
		{"drop column", "postgres", "x.tx.up.sql", "ALTER TABLE threads DROP COLUMN recent_at;", []string{ruleContract}},
		{"drop column without the word", "postgres", "x.tx.up.sql", "alter table threads drop recent_at, add column b text;", []string{ruleContract}},
		{"drop column if exists", "sqlite", "x.tx.up.sql", "ALTER TABLE threads DROP COLUMN IF EXISTS recent_at;", []string{ruleContract}},
		{"drop table", "postgres", "x.tx.up.sql", "DROP TABLE IF EXISTS contacts;", []string{ruleContract}},
		{"rename column", "postgres", "x.tx.up.sql", "ALTER TABLE messages RENAME COLUMN body TO text;", []string{ruleContract}},
		{"rename column without the word", "postgres", "x.tx.up.sql", "ALTER TABLE messages RENAME body TO text;", []string{ruleContract}},
		{"rename table", "postgres", "x.tx.up.sql", "ALTER TABLE messages RENAME TO notes;", []string{ruleContract}},
		{"change a type", "postgres", "x.tx.up.sql", "ALTER TABLE messages ALTER COLUMN latitude TYPE REAL;", []string{ruleContract}},
		{"change a type, long form", "postgres", "x.tx.up.sql", "ALTER TABLE messages ALTER latitude SET DATA TYPE REAL USING latitude::real;", []string{ruleContract}},
		{"not null without default", "postgres", "x.tx.up.sql", "ALTER TABLE messages ADD COLUMN lang TEXT NOT NULL;", []string{ruleNotNull}},
		{"sqlite rebuild", "sqlite", "x.tx.up.sql", `CREATE TABLE threads_new (id TEXT PRIMARY KEY);
INSERT INTO threads_new SELECT id FROM threads;
DROP TABLE threads;
ALTER TABLE threads_new RENAME TO threads;`, []string{ruleContract}},
		{"index on an existing table", "postgres", "x.tx.up.sql", "CREATE INDEX messages_lang ON messages (lang);", []string{ruleIndex}},
		{"concurrently in a transaction", "postgres", "x.tx.up.sql", "CREATE INDEX CONCURRENTLY messages_lang ON messages (lang);", []string{ruleConcurrently}},
		{"concurrently beside another statement", "postgres", "x.up.sql", "DROP INDEX CONCURRENTLY IF EXISTS messages_lang;\nCREATE INDEX CONCURRENTLY messages_lang ON messages (lang);", []string{ruleConcurrently}},
		{"marker of an unknown commit", "postgres", "x.tx.up.sql", "-- contract: threads.recent_at unused since deadbeef\nALTER TABLE threads DROP COLUMN recent_at;", []string{ruleContract, ruleMarker}},
		{"marker of another column", "postgres", "x.tx.up.sql", "-- contract: threads.other unused since 1a2b3c4d\nALTER TABLE threads DROP COLUMN recent_at;", []string{ruleContract, ruleMarker}},
		{"marker without its commit", "postgres", "x.tx.up.sql", "-- contract: threads.recent_at\nALTER TABLE threads DROP COLUMN recent_at;", []string{ruleContract, ruleMarker}},

		{"add a nullable column", "postgres", "x.tx.up.sql", "ALTER TABLE messages ADD COLUMN lang TEXT;", nil},
		{"add a column with a default", "postgres", "x.tx.up.sql", "ALTER TABLE messages ADD COLUMN lang TEXT NOT NULL DEFAULT '';", nil},
		{"add a generated column", "postgres", "x.tx.up.sql", "ALTER TABLE processes ADD COLUMN lock_key INTEGER NOT NULL GENERATED ALWAYS AS IDENTITY;", nil},
		{"drop a constraint, a default, not null", "postgres", "x.tx.up.sql",
			"ALTER TABLE messages DROP CONSTRAINT messages_thread_id_fkey;\nALTER TABLE messages ALTER COLUMN lang DROP DEFAULT, ALTER COLUMN lang DROP NOT NULL;", nil},
		{"drop and rename an index", "postgres", "x.tx.up.sql", "DROP INDEX IF EXISTS threads_recent;\nALTER INDEX threads_activity RENAME TO threads_by_activity;", nil},
		{"contract with its marker", "postgres", "x.tx.up.sql",
			"-- contract: threads.recent_at, contacts unused since 1a2b3c4d\nALTER TABLE threads DROP COLUMN recent_at;\nDROP TABLE contacts;", nil},
		{"a whole table covers its columns", "postgres", "x.tx.up.sql",
			"-- contract: threads unused since 1a2b3c4d\nALTER TABLE threads DROP COLUMN recent_at, DROP COLUMN other;", nil},
		{"index on a table of the same migration", "postgres", "x.tx.up.sql",
			"CREATE TABLE notes (id TEXT PRIMARY KEY, thread_id TEXT NOT NULL);\nCREATE INDEX notes_thread ON notes (thread_id);", nil},
		{"index on sqlite", "sqlite", "x.tx.up.sql", "CREATE INDEX messages_lang ON messages (lang);", nil},
		{"the concurrently recipe", "postgres", "20261201000100_messages_lang.up.sql",
			"-- Built without blocking sends.\nDROP INDEX CONCURRENTLY IF EXISTS messages_lang;\n--bun:split\nCREATE INDEX CONCURRENTLY messages_lang ON messages (lang);\n", nil},
		{"a table dropped in its own migration", "sqlite", "x.tx.up.sql",
			"CREATE TABLE scratch (id TEXT);\nDROP TABLE scratch;", nil},
		{"words in bodies and strings", "postgres", "x.tx.up.sql",
			"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    DROP TABLE threads;\n    RETURN NULL;\nEND\n$$;\nINSERT INTO notes (text) VALUES ('ALTER TABLE threads DROP COLUMN x;');\n-- DROP TABLE threads; (a comment)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range checkMigration(c.dialect, c.file, c.sql, known) {
				got = append(got, p.rule)
			}
			slices.Sort(got)
			require.Equal(t, c.want, got, "%s", c.sql)
		})
	}
}

// migrationProblem is one rule a migration breaks.
type migrationProblem struct {
	file, rule, subject, detail string
}

func (p migrationProblem) String() string {
	return fmt.Sprintf("%s: %s (%s): %s", p.file, p.rule, p.subject, p.detail)
}

var (
	// contractMarker is a contract marker: "-- contract: a.b, c unused since <commit>".
	contractMarker = regexp.MustCompile(`(?im)^\s*--\s*contract:\s*(.*?)\s*$`)
	markerBody     = regexp.MustCompile(`(?i)^(.+?)\s+unused since\s+([0-9a-f]{7,40})$`)
	lineComment    = regexp.MustCompile(`--[^\n]*`)
	stringLiteral  = regexp.MustCompile(`'(?:[^']|'')*'`)
	dollarTag      = regexp.MustCompile(`\$[A-Za-z_]*\$`)
	spaces         = regexp.MustCompile(`\s+`)
	createTable    = regexp.MustCompile(`^create (?:temp |temporary )?table (?:if not exists )?(\w+)`)
	dropTable      = regexp.MustCompile(`^drop table (?:if exists )?(\w+(?:\s*,\s*\w+)*)`)
	alterTable     = regexp.MustCompile(`^alter table (?:if exists )?(?:only )?(\w+) (.*)$`)
	createIndex    = regexp.MustCompile(`^create (?:unique )?index (concurrently )?(?:if not exists )?(?:\w+ )?on (?:only )?(\w+)`)
	renameTo       = regexp.MustCompile(`^rename to \w+`)
	renameColumn   = regexp.MustCompile(`^rename (?:column )?(\w+) to \w+`)
	dropColumn     = regexp.MustCompile(`^drop (?:column )?(?:if exists )?(\w+)`)
	changeType     = regexp.MustCompile(`^alter (?:column )?(\w+) (?:set data )?type `)
	addColumn      = regexp.MustCompile(`^add (?:column )?(?:if not exists )?(\w+) (.*)$`)
)

// notColumns are the words after DROP, RENAME or ADD in ALTER TABLE that
// name no column.
var notColumns = []string{"constraint", "default", "not", "identity", "expression", "primary", "unique", "foreign", "check", "exclude"}

// checkMigration returns the rules the migration file name of dialect
// ("postgres" or "sqlite") with text breaks. commitOK says whether a
// contract marker's commit is a commit from which the code can stop
// reading what the contract removes (an ancestor of HEAD).
func checkMigration(dialect, name, text string, commitOK func(string) error) []migrationProblem {
	var problems []migrationProblem
	problem := func(rule, subject, detail string) {
		problems = append(problems, migrationProblem{file: dialect + "/" + name, rule: rule, subject: subject, detail: detail})
	}
	// Markers: what each covers.
	covered := map[string]bool{}
	for _, m := range contractMarker.FindAllStringSubmatch(text, -1) {
		body := markerBody.FindStringSubmatch(m[1])
		if body == nil {
			problem(ruleMarker, m[1], `a contract marker reads "-- contract: table.column[, ...] unused since <commit>"`)
			continue
		}
		if err := commitOK(body[2]); err != nil {
			problem(ruleMarker, body[1], err.Error())
			continue
		}
		for _, s := range strings.Split(body[1], ",") {
			covered[strings.ToLower(strings.TrimSpace(s))] = false
		}
	}

	// Statements, chunk by chunk, without comments, strings and function
	// bodies, lower case, one space between words.
	var chunks [][]string
	created := map[string]bool{}
	for _, chunk := range splitChunks(text) {
		var stmts []string
		for _, s := range strings.Split(stripBodies(stringLiteral.ReplaceAllString(lineComment.ReplaceAllString(chunk, ""), "''")), ";") {
			s = strings.ToLower(strings.TrimSpace(spaces.ReplaceAllString(strings.ReplaceAll(s, `"`, ""), " ")))
			if s == "" {
				continue
			}
			stmts = append(stmts, s)
			if m := createTable.FindStringSubmatch(s); m != nil {
				created[m[1]] = true
			}
		}
		chunks = append(chunks, stmts)
	}

	contract := func(subject, stmt string) {
		table, _, _ := strings.Cut(subject, ".")
		if created[table] {
			return // made and unmade in this migration
		}
		if _, ok := covered[subject]; ok {
			covered[subject] = true
			return
		}
		if _, ok := covered[table]; ok {
			covered[table] = true
			return
		}
		problem(ruleContract, subject, "drops, renames or retypes what the previous build may read; stop reading it first, then add \"-- contract: "+subject+" unused since <commit>\" (docs/upgrading.md): "+stmt)
	}
	for _, stmts := range chunks {
		for _, s := range stmts {
			if m := dropTable.FindStringSubmatch(s); m != nil {
				for _, table := range strings.Split(m[1], ",") {
					contract(strings.TrimSpace(table), s)
				}
				continue
			}
			if m := createIndex.FindStringSubmatch(s); m != nil && dialect == "postgres" {
				switch {
				case m[1] != "" && (strings.HasSuffix(name, ".tx.up.sql") || len(stmts) > 1):
					problem(ruleConcurrently, m[2], "CREATE INDEX CONCURRENTLY runs outside a transaction: a migration without .tx, one statement per --bun:split chunk")
				case m[1] == "" && !created[m[2]]:
					problem(ruleIndex, m[2], "an index on an existing table is built CONCURRENTLY, so that the table takes writes meanwhile (docs/upgrading.md): "+s)
				}
				continue
			}
			m := alterTable.FindStringSubmatch(s)
			if m == nil {
				continue
			}
			table := m[1]
			for _, action := range splitTopLevel(m[2]) {
				switch {
				case renameTo.MatchString(action):
					contract(table, s)
				case renameColumn.MatchString(action):
					if col := renameColumn.FindStringSubmatch(action)[1]; !slices.Contains(notColumns, col) {
						contract(table+"."+col, s)
					}
				case dropColumn.MatchString(action):
					if col := dropColumn.FindStringSubmatch(action)[1]; !slices.Contains(notColumns, col) {
						contract(table+"."+col, s)
					}
				case changeType.MatchString(action):
					contract(table+"."+changeType.FindStringSubmatch(action)[1], s)
				case addColumn.MatchString(action):
					add := addColumn.FindStringSubmatch(action)
					def := " " + add[2] + " "
					if !slices.Contains(notColumns, add[1]) && strings.Contains(def, " not null ") &&
						!strings.Contains(def, " default ") && !strings.Contains(def, " generated ") {
						problem(ruleNotNull, table+"."+add[1], "the previous build's INSERTs leave the new column out: give it a DEFAULT or let it be NULL: "+s)
					}
				}
			}
		}
	}
	for subject, used := range covered {
		if !used {
			problem(ruleMarker, subject, "the contract marker names what this migration does not drop, rename or retype")
		}
	}
	return problems
}

// splitChunks splits a migration at its --bun:split lines, as bun does.
func splitChunks(text string) []string {
	var chunks []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "--bun:split" {
			chunks = append(chunks, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(chunks, cur.String())
}

// stripBodies removes dollar-quoted text ($$ … $$, $tag$ … $tag$):
// function bodies, which run when called, not when migrating.
func stripBodies(s string) string {
	var out strings.Builder
	for {
		loc := dollarTag.FindStringIndex(s)
		if loc == nil {
			return out.String() + s
		}
		tag := s[loc[0]:loc[1]]
		out.WriteString(s[:loc[0]])
		rest := s[loc[1]:]
		end := strings.Index(rest, tag)
		if end < 0 {
			return out.String()
		}
		out.WriteString("''")
		s = rest[end+len(tag):]
	}
}

// splitTopLevel splits an ALTER TABLE's actions at the commas outside
// parentheses.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}
