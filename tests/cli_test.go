package tests

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// TestCLIOperatorFlow walks through what an operator does to onboard a
// customer: an account, numbers, keys and domains, all with --json.
func TestCLIOperatorFlow(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.createAccount(t, "Acme Robotics")
		require.Equal(t, "Acme Robotics", acc.Name)
		require.True(t, strings.HasPrefix(acc.KeyID, "key_"), "key id %q", acc.KeyID)

		// Numbers: add two, list, disable one by id and one by E.164.
		wa := b.addNumber(t, acc.AccountID, "+14155550100")
		require.Equal(t, numberOut{NumberID: wa.NumberID, AccountID: acc.AccountID, Number: "+14155550100",
			Service: "whatsapp", Provider: "sandbox", Enabled: true, CreatedAt: wa.CreatedAt}, wa)
		var tg numberOut
		b.cliJSON(t, &tg, "numbers", "add", "--account", acc.AccountID, "--number", "+447700900123",
			"--service", "telegram", "--provider", "telegram", "--setting", "bot_token=123:abc")
		require.True(t, strings.HasPrefix(tg.NumberID, "num_"), "number id %q", tg.NumberID)
		require.Equal(t, "telegram", tg.Provider)

		var numbers []numberOut
		raw := b.cliJSON(t, &numbers, "numbers", "list", "--account", acc.AccountID)
		require.Len(t, numbers, 2)
		require.ElementsMatch(t, []string{wa.NumberID, tg.NumberID}, []string{numbers[0].NumberID, numbers[1].NumberID})
		require.NotContains(t, raw, "123:abc", "provider settings are never printed")

		var disabled numberOut
		b.cliJSON(t, &disabled, "numbers", "disable", "--account", acc.AccountID, "--number", wa.NumberID)
		require.Equal(t, wa.NumberID, disabled.NumberID)
		require.False(t, disabled.Enabled)
		b.cliJSON(t, &disabled, "numbers", "disable", "--account", acc.AccountID, "--number", "+447700900123")
		require.Equal(t, tg.NumberID, disabled.NumberID)
		require.False(t, disabled.Enabled)
		b.cliJSON(t, &numbers, "numbers", "list", "--account", acc.AccountID)
		require.Len(t, numbers, 2)
		for _, n := range numbers {
			require.False(t, n.Enabled, "number %s after disable", n.Number)
		}

		// Keys: issue a second one, list (no secrets), revoke it.
		var issued issuedKey
		b.cliJSON(t, &issued, "keys", "create", "--account", acc.AccountID, "--label", "ci")
		require.True(t, strings.HasPrefix(issued.KeyID, "key_"), "key id %q", issued.KeyID)
		require.True(t, strings.HasPrefix(issued.APIKey, "swk_"), "api key %q", issued.APIKey)
		require.True(t, strings.HasPrefix(issued.APISecret, "sws_"), "api secret %q", issued.APISecret)
		require.Equal(t, "ci", issued.Label)

		var keys []listedKey
		raw = b.cliJSON(t, &keys, "keys", "list", "--account", acc.AccountID)
		require.Len(t, keys, 2)
		for _, secret := range []string{acc.APISecret, issued.APISecret, acc.APIKey, issued.APIKey, "sws_", "secret"} {
			require.NotContains(t, raw, secret, "keys list shows only key ids and prefixes")
		}
		for _, k := range keys {
			require.Empty(t, k.RevokedAt, "key %s before revocation", k.KeyID)
			require.True(t, strings.HasPrefix(k.KeyPrefix, "swk_"), "key prefix %q", k.KeyPrefix)
		}

		var revoked listedKey
		b.cliJSON(t, &revoked, "keys", "revoke", "--account", acc.AccountID, "--key", issued.KeyID)
		require.Equal(t, issued.KeyID, revoked.KeyID)
		require.NotEmpty(t, revoked.RevokedAt)
		b.cliJSON(t, &keys, "keys", "list", "--account", acc.AccountID)
		require.Len(t, keys, 2)
		for _, k := range keys {
			if k.KeyID == issued.KeyID {
				require.Equal(t, revoked.RevokedAt, k.RevokedAt)
			} else {
				require.Empty(t, k.RevokedAt, "the account's first key stays valid")
			}
		}

		// Domains are normalised to lower case.
		var dom domainOut
		b.cliJSON(t, &dom, "domains", "add", "--account", acc.AccountID, "--domain", "Mail.Acme.Example")
		require.True(t, strings.HasPrefix(dom.DomainID, "dom_"), "domain id %q", dom.DomainID)
		require.Equal(t, "mail.acme.example", dom.Domain)
		var domains []domainOut
		b.cliJSON(t, &domains, "domains", "list", "--account", acc.AccountID)
		require.Equal(t, []domainOut{{DomainID: dom.DomainID, Domain: "mail.acme.example", CreatedAt: dom.CreatedAt}}, domains)

		// The database URL from the environment instead of the flag.
		stdout, stderr, code := runCLI(t, append([]string{"SWITCHBOARD_DATABASE_URL=" + b.dbURL}, b.env...), "accounts", "list", "--json")
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, `[{"account_id":"`+acc.AccountID+`","name":"Acme Robotics","created_at":"`+acc.CreatedAt+`"}]`, stdout)

		// A flag wins over its environment variable.
		var accounts []listedAccount
		stdout, stderr, code = runCLI(t, append([]string{"SWITCHBOARD_DATABASE_URL=mysql://nowhere"}, b.env...),
			"accounts", "list", "--json", "--database-url", b.dbURL)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, acc.AccountID)
		b.cliJSON(t, &accounts, "accounts", "list")
		require.Equal(t, []listedAccount{{AccountID: acc.AccountID, Name: "Acme Robotics", CreatedAt: acc.CreatedAt}}, accounts)
	})
}

// TestCLIRejectsBadInput checks that every refused command fails with one
// line and exit code 1, and leaves the database as it was.
func TestCLIRejectsBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.createAccount(t, "Acme")
		existing := b.addNumber(t, acc.AccountID, "+14155550100")

		add := func(args ...string) []string {
			return append([]string{"numbers", "add", "--account", acc.AccountID}, args...)
		}
		cases := []struct {
			name string
			args []string
			// want is a part of the message.
			want string
		}{
			{"E.164 without plus", add("--number", "4155550100", "--service", "whatsapp"), "E.164"},
			{"E.164 leading zero", add("--number", "+0123", "--service", "whatsapp"), "E.164"},
			{"E.164 too long", add("--number", "+1234567890123456", "--service", "whatsapp"), "E.164"},
			{"unknown service", add("--number", "+14155550199", "--service", "sms"), "service"},
			{"unknown provider", add("--number", "+14155550199", "--service", "whatsapp", "--provider", "twilio"), "provider"},
			{"provider cannot serve service", add("--number", "+14155550199", "--service", "whatsapp", "--provider", "telegram"), "cannot serve"},
			{"unknown account", []string{"numbers", "add", "--account", "acc_" + strings.Repeat("a", 26), "--number", "+14155550199", "--service", "whatsapp"}, "account not found"},
			{"duplicate number", add("--number", "+14155550100", "--service", "whatsapp"), "+14155550100 is already registered"},
			{"setting without =", add("--number", "+14155550199", "--service", "whatsapp", "--setting", "bot_token"), "key=value"},
			{"missing required flag", add("--service", "whatsapp"), `"number"`},
		}
		// Sequential subtests: the check below runs after all of them.
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				stdout, stderr, code := b.cli(t, append(c.args, "--json")...)
				msg := requireOneLineError(t, stdout, stderr, code)
				require.Contains(t, msg, c.want)
			})
		}

		// Nothing was created by any of them.
		var numbers []numberOut
		b.cliJSON(t, &numbers, "numbers", "list", "--account", acc.AccountID)
		require.Equal(t, []numberOut{existing}, numbers)
		var accounts []listedAccount
		b.cliJSON(t, &accounts, "accounts", "list")
		require.Len(t, accounts, 1)
	})
}

// TestCLIRejectsBadConfiguration checks the configuration errors that stop
// a command before it touches any data.
func TestCLIRejectsBadConfiguration(t *testing.T) {
	t.Parallel()
	key := "SWITCHBOARD_SECRET_KEY=" + newSecretKey(t)
	const unreachable = "postgres://postgres@127.0.0.1:1/x?sslmode=disable"

	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unsupported database URL", []string{key}, []string{"accounts", "list", "--database-url", "mysql://x"}, "must start with sqlite: or postgres://"},
		{"unreachable Postgres", []string{key}, []string{"accounts", "list", "--database-url", unreachable}, "unreachable"},
		{"unreachable Postgres from the environment", []string{key, "SWITCHBOARD_DATABASE_URL=" + unreachable}, []string{"accounts", "create", "--name", "x"}, "unreachable"},
		{"bad secret key", []string{"SWITCHBOARD_SECRET_KEY=short"}, []string{"accounts", "list", "--database-url", "sqlite:var/x.db"}, "secret key"},
		{"bad log level", []string{key}, []string{"accounts", "list", "--log-level", "loud"}, "log level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			stdout, stderr, code := runCLIIn(t, dir, c.env, c.args...)
			msg := requireOneLineError(t, stdout, stderr, code)
			require.Contains(t, msg, c.want)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "a refused command creates nothing in its working directory")
		})
	}

	t.Run("serve on Postgres without a secret key", func(t *testing.T) {
		t.Parallel()
		dbURL := dbtest.URL(t, store.Postgres)
		stdout, stderr, code := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL)
		msg := requireOneLineError(t, stdout, stderr, code)
		require.Contains(t, msg, "SWITCHBOARD_SECRET_KEY")

		// With the key, the database is usable and holds nothing.
		stdout, stderr, code = runCLI(t, []string{key}, "accounts", "list", "--json", "--database-url", dbURL)
		require.Equal(t, 0, code, stderr)
		require.JSONEq(t, `[]`, stdout)
	})
}

// TestCLIVersion checks that the version stamped at build time is printed
// by the flag and by the command, with no configuration needed.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		// A bad setting in the environment does not hide the version.
		stdout, stderr, code := runCLI(t, []string{"SWITCHBOARD_LOG_LEVEL=loud"}, args...)
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stderr)
		require.Regexp(t, `^switchboard `+regexp.QuoteMeta(stampedVersion)+` \(.*go1\.\d+.* \w+/\w+\)\n$`, stdout, args)
	}
}

// TestCLIUnknownCommand checks that a mistyped command fails with exit
// code 2 and the usage of the command it was given to, at every level.
func TestCLIUnknownCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args      []string
		firstLine string
		// listed are commands the usage must show.
		listed []string
	}{
		{[]string{"bogus"}, `switchboard: unknown command "bogus" for "switchboard"`, []string{"serve", "migrate", "version"}},
		{[]string{"acounts", "list"}, `switchboard: unknown command "acounts" for "switchboard" (did you mean accounts?)`, []string{"accounts"}},
		{[]string{"accounts", "bogus"}, `switchboard: unknown command "bogus" for "switchboard accounts"`, []string{"create", "list"}},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, nil, c.args...)
		require.Equal(t, 2, code, "exit code of switchboard %s (stderr %q)", strings.Join(c.args, " "), stderr)
		require.Empty(t, stdout)
		first, usage, _ := strings.Cut(stderr, "\n")
		require.Equal(t, c.firstLine, first)
		require.Contains(t, usage, "Usage:")
		for _, name := range c.listed {
			require.Regexp(t, `(?m)^\s+`+name+`\s`, usage, "the usage lists %s", name)
		}
	}
}

// TestCLIMigrate checks that migrate reports the migrations it applied,
// and that there is nothing to apply the second time.
func TestCLIMigrate(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		files, err := fs.Glob(store.MigrationFiles(), "migrations/"+string(dialect)+"/*.up.sql")
		require.NoError(t, err)
		require.NotEmpty(t, files)
		var want []string
		for _, f := range files {
			want = append(want, strings.TrimSuffix(strings.TrimSuffix(path.Base(f), ".up.sql"), ".tx"))
		}

		b := setupEmpty(t, dialect)
		// No server key needed: migrating touches no secret.
		stdout, stderr, code := runCLI(t, nil, "migrate", "--database-url", b.dbURL)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, fmt.Sprintf("applied %d migrations:\n  %s\n", len(want), strings.Join(want, "\n  ")), stdout)

		stdout, stderr, code = b.cli(t, "migrate")
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "nothing to apply: the database is up to date\n", stdout)
		var out struct {
			Status  string   `json:"status"`
			Applied []string `json:"applied"`
		}
		b.cliJSON(t, &out, "migrate")
		require.Equal(t, "ok", out.Status)
		require.Equal(t, []string{}, out.Applied)
	})
}
