package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// settings holds the raw flag values; bootstrap.Config is built from them
// once flags and SWITCHBOARD_* variables are merged.
type settings struct {
	cfg              bootstrap.Config
	logLevel         string
	allowPrivateURLs string
	trustedProxies   string
	mcpOrigins       string
	mcpHosts         string
	json             bool
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{cfg: bootstrap.Defaults()}
	root := &cobra.Command{
		Use:           "switchboard",
		Short:         "Messaging, email and scheduling gateway for AI agents",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Annotations[groupAnnotation] != "" {
				return nil
			}
			return s.resolve(cmd)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&s.cfg.DatabaseURL, "database-url", s.cfg.DatabaseURL, "database: sqlite:PATH or postgres://user@host:port/db")
	pf.StringVar(&s.cfg.SecretKey, "secret-key", "", "server key every stored secret derives from (64 hex characters); default: generated into var/secret.key beside a SQLite database")
	pf.StringVar(&s.cfg.SecretKeyFile, "secret-key-file", "", "file holding the server key")
	pf.StringVar(&s.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&s.cfg.LogFormat, "log-format", s.cfg.LogFormat, "log format: text or json")
	pf.BoolVar(&s.json, "json", false, "print machine-readable JSON")

	root.AddCommand(
		newServeCommand(s),
		newMigrateCommand(s),
		newAccountsCommand(s),
		newKeysCommand(s),
		newNumbersCommand(s),
		newDomainsCommand(s),
		newJobsCommand(s),
		newWebhookCommand(s),
		newEraseCommand(s),
		newMCPCommand(s),
		newVersionCommand(),
	)
	catchUnknownCommands(root)
	return root
}

// resolve fills every flag the command line left unset from its
// SWITCHBOARD_* environment variable (--database-url ← SWITCHBOARD_DATABASE_URL),
// then checks and converts the values that need it.
func (s *settings) resolve(cmd *cobra.Command) error {
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || firstErr != nil {
			return
		}
		env := "SWITCHBOARD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookupEnv(env); ok {
			if err := f.Value.Set(v); err != nil {
				firstErr = fmt.Errorf("%s: %w", env, err)
			}
		}
	})
	if firstErr != nil {
		return firstErr
	}
	if err := s.cfg.LogLevel.UnmarshalText([]byte(s.logLevel)); err != nil {
		return fmt.Errorf("log level %q: use debug, info, warn or error", s.logLevel)
	}
	if s.cfg.LogFormat != "text" && s.cfg.LogFormat != "json" {
		return fmt.Errorf("log format %q: use text or json", s.cfg.LogFormat)
	}
	prefixes, err := bootstrap.ParsePrefixes(s.allowPrivateURLs)
	if err != nil {
		return fmt.Errorf("allow-private-urls: %w", err)
	}
	s.cfg.AllowPrivateURLs = prefixes
	if s.cfg.Limits.TrustedProxies, err = bootstrap.ParsePrefixes(s.trustedProxies); err != nil {
		return fmt.Errorf("trusted-proxies: %w", err)
	}
	if s.cfg.MCP.AllowedOrigins, err = bootstrap.ParseOrigins(s.mcpOrigins); err != nil {
		return fmt.Errorf("mcp-allowed-origins: %w", err)
	}
	if s.cfg.MCP.AllowedHosts, err = bootstrap.ParseHosts(s.mcpHosts); err != nil {
		return fmt.Errorf("mcp-allowed-hosts: %w", err)
	}
	return nil
}

// operator is what the operator commands work with, built from the same
// modules as serve (bootstrap.OperatorOptions) over an open, migrated
// database.
type operator struct {
	accounts *accounts.Service
	webhooks *webhooks.Service
	erasure  *erasure.Service
	db       *store.DB
}

// openOperator starts the operator app: it opens the configured database
// and migrates it, the same way serve does, so operator commands work on a
// fresh database too.
func (s *settings) openOperator(ctx context.Context) (*operator, func(), error) {
	op := &operator{}
	app := fx.New(bootstrap.OperatorOptions(s.cfg), fx.Populate(&op.accounts, &op.webhooks, &op.erasure, &op.db))
	if err := app.Err(); err != nil {
		return nil, nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return nil, nil, err
	}
	return op, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
		defer cancel()
		_ = app.Stop(stopCtx)
	}, nil
}

// withOperator adapts an operator command's body to cobra: it opens the
// database (migrating it) before the body and closes it after.
func (s *settings) withOperator(fn func(cmd *cobra.Command, args []string, op *operator) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		op, done, err := s.openOperator(cmd.Context())
		if err != nil {
			return err
		}
		defer done()
		return fn(cmd, args, op)
	}
}

// print writes v as JSON with --json, else the human text.
func (s *settings) print(cmd *cobra.Command, v any, human func(w io.Writer)) error {
	if s.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(cmd.OutOrStdout())
	return nil
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }
