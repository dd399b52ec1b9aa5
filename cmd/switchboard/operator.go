package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
)

type credentialJSON struct {
	KeyID     string `json:"key_id"`
	AccountID string `json:"account_id"`
	Label     string `json:"label"`
	KeyPrefix string `json:"key_prefix"`
	CreatedAt string `json:"created_at"`
	RevokedAt string `json:"revoked_at,omitempty"`
}

func credentialOut(c account.Credential) credentialJSON {
	out := credentialJSON{KeyID: c.ID, AccountID: c.AccountID, Label: c.Label, KeyPrefix: c.KeyPrefix, CreatedAt: ts(c.CreatedAt)}
	if c.RevokedAt != nil {
		out.RevokedAt = ts(*c.RevokedAt)
	}
	return out
}

func printSecretOnce(w io.Writer, issued accounts.IssuedCredential) {
	fmt.Fprintf(w, "api key:    %s\napi secret: %s\n(the secret is shown only now; only a keyed hash is stored)\n", issued.Key, issued.Secret)
}

func newAccountsCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "accounts", Short: "Create and list accounts"}
	var name string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an account with its first API key",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			a, issued, err := op.accounts.CreateAccount(cmd.Context(), name)
			if err != nil {
				return err
			}
			return s.print(cmd, map[string]any{
				"account_id": a.ID, "name": a.Name, "key_id": issued.Credential.ID,
				"api_key": issued.Key, "api_secret": issued.Secret, "created_at": ts(a.CreatedAt),
			}, func(w io.Writer) {
				fmt.Fprintf(w, "account:    %s (%s)\n", a.ID, a.Name)
				printSecretOnce(w, issued)
			})
		}),
	}
	create.Flags().StringVar(&name, "name", "", "account name (required)")
	_ = create.MarkFlagRequired("name")

	list := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			list, err := op.accounts.Accounts(cmd.Context())
			if err != nil {
				return err
			}
			out := make([]map[string]string, len(list))
			for i, a := range list {
				out[i] = map[string]string{"account_id": a.ID, "name": a.Name, "created_at": ts(a.CreatedAt)}
			}
			return s.print(cmd, out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ACCOUNT\tNAME\tCREATED")
				for _, a := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", a.ID, a.Name, ts(a.CreatedAt))
				}
				tw.Flush()
			})
		}),
	}
	cmd.AddCommand(create, list, newRetentionCommand(s))
	return cmd
}

func newKeysCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Issue, list and revoke API keys"}
	var accountID, label, keyID string
	create := &cobra.Command{
		Use:   "create",
		Short: "Issue a new API key and secret for an account",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			issued, err := op.accounts.IssueCredential(cmd.Context(), accountID, label)
			if err != nil {
				return err
			}
			out := credentialOut(issued.Credential)
			return s.print(cmd, map[string]any{
				"key_id": out.KeyID, "account_id": out.AccountID, "label": out.Label,
				"api_key": issued.Key, "api_secret": issued.Secret, "created_at": out.CreatedAt,
			}, func(w io.Writer) {
				fmt.Fprintf(w, "key id:     %s\n", issued.Credential.ID)
				printSecretOnce(w, issued)
			})
		}),
	}
	create.Flags().StringVar(&accountID, "account", "", "account id (required)")
	create.Flags().StringVar(&label, "label", "", "a name for the key, e.g. production")
	_ = create.MarkFlagRequired("account")

	list := &cobra.Command{
		Use:   "list",
		Short: "List an account's keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			creds, err := op.accounts.Credentials(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			out := make([]credentialJSON, len(creds))
			for i, c := range creds {
				out[i] = credentialOut(c)
			}
			return s.print(cmd, out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY ID\tPREFIX\tLABEL\tCREATED\tREVOKED")
				for _, c := range out {
					fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", c.KeyID, c.KeyPrefix, c.Label, c.CreatedAt, c.RevokedAt)
				}
				tw.Flush()
			})
		}),
	}
	list.Flags().StringVar(&accountID, "account", "", "account id (required)")
	_ = list.MarkFlagRequired("account")

	revoke := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke an API key",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			c, err := op.accounts.RevokeCredential(cmd.Context(), accountID, keyID)
			if err != nil {
				return err
			}
			return s.print(cmd, credentialOut(c), func(w io.Writer) {
				fmt.Fprintf(w, "revoked %s\n", c.ID)
			})
		}),
	}
	revoke.Flags().StringVar(&accountID, "account", "", "account id (required)")
	revoke.Flags().StringVar(&keyID, "key", "", "key id, as printed by keys list (required)")
	_ = revoke.MarkFlagRequired("account")
	_ = revoke.MarkFlagRequired("key")
	cmd.AddCommand(create, list, revoke)
	return cmd
}

type numberJSON struct {
	NumberID  string `json:"number_id"`
	AccountID string `json:"account_id"`
	Number    string `json:"number"`
	Service   string `json:"service"`
	Provider  string `json:"provider"`
	Enabled   bool   `json:"enabled"`
	CreatedAt string `json:"created_at"`
}

func numberOut(n account.Number) numberJSON {
	return numberJSON{NumberID: n.ID, AccountID: n.AccountID, Number: n.Number, Service: string(n.Service),
		Provider: string(n.Provider), Enabled: n.Enabled, CreatedAt: ts(n.CreatedAt)}
}

func newNumbersCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "numbers", Short: "Add, list and disable agent numbers"}
	var (
		accountID, number, service, provider string
		settingsKV                           []string
		disabled                             bool
		pflags                               providerFlags
	)
	add := &cobra.Command{
		Use:   "add",
		Short: "Add an agent number to an account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			providerSettings := map[string]string{}
			for _, kv := range settingsKV {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--setting %q: use key=value", kv)
				}
				providerSettings[k] = v
			}
			if err := pflags.apply(provider, service, providerSettings); err != nil {
				return err
			}
			op, done, err := s.openOperator(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			n, err := op.accounts.AddNumber(cmd.Context(), accounts.NumberInput{
				AccountID: accountID, Number: number, Service: service, Provider: provider,
				Settings: providerSettings, Enabled: !disabled,
			})
			if err != nil {
				return err
			}
			return s.print(cmd, numberOut(n), func(w io.Writer) {
				fmt.Fprintf(w, "number %s added as %s (%s via %s)\n", n.Number, n.ID, n.Service, n.Provider)
			})
		},
	}
	af := add.Flags()
	af.StringVar(&accountID, "account", "", "account id (required)")
	af.StringVar(&number, "number", "", "the number in E.164 form, e.g. +14155550100 (required)")
	af.StringVar(&service, "service", "", "whatsapp or telegram (required)")
	af.StringVar(&provider, "provider", "sandbox", "sandbox, telegram or whatsapp-cloud")
	af.StringArrayVar(&settingsKV, "setting", nil, "provider setting key=value (repeatable); stored encrypted")
	af.BoolVar(&disabled, "disabled", false, "add the number disabled")
	pflags.register(af)
	for _, name := range []string{"account", "number", "service"} {
		_ = add.MarkFlagRequired(name)
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List an account's agent numbers",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			numbers, err := op.accounts.Numbers(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			out := make([]numberJSON, len(numbers))
			for i, n := range numbers {
				out[i] = numberOut(n)
			}
			return s.print(cmd, out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NUMBER ID\tNUMBER\tSERVICE\tPROVIDER\tENABLED")
				for _, n := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\n", n.NumberID, n.Number, n.Service, n.Provider, n.Enabled)
				}
				tw.Flush()
			})
		}),
	}
	list.Flags().StringVar(&accountID, "account", "", "account id (required)")
	_ = list.MarkFlagRequired("account")

	disable := &cobra.Command{
		Use:   "disable",
		Short: "Disable an agent number (by number id or E.164 number)",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			n, err := op.accounts.SetNumberEnabled(cmd.Context(), accountID, number, false)
			if err != nil {
				return err
			}
			return s.print(cmd, numberOut(n), func(w io.Writer) {
				fmt.Fprintf(w, "number %s (%s) disabled\n", n.Number, n.ID)
			})
		}),
	}
	disable.Flags().StringVar(&accountID, "account", "", "account id (required)")
	disable.Flags().StringVar(&number, "number", "", "number id or E.164 number (required)")
	_ = disable.MarkFlagRequired("account")
	_ = disable.MarkFlagRequired("number")
	cmd.AddCommand(add, list, disable, newNumbersCheckCommand(s))
	return cmd
}

func newDomainsCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "domains", Short: "Authorise and list custom email domains"}
	var accountID, domain string
	add := &cobra.Command{
		Use:   "add",
		Short: "Authorise a custom email domain for an account",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			d, err := op.accounts.AddDomain(cmd.Context(), accountID, domain)
			if err != nil {
				return err
			}
			return s.print(cmd, map[string]string{"domain_id": d.ID, "account_id": d.AccountID, "domain": d.Name, "created_at": ts(d.CreatedAt)},
				func(w io.Writer) { fmt.Fprintf(w, "domain %s authorised for %s\n", d.Name, d.AccountID) })
		}),
	}
	add.Flags().StringVar(&accountID, "account", "", "account id (required)")
	add.Flags().StringVar(&domain, "domain", "", "DNS name, e.g. mail.example.com (required)")
	_ = add.MarkFlagRequired("account")
	_ = add.MarkFlagRequired("domain")

	list := &cobra.Command{
		Use:   "list",
		Short: "List an account's custom email domains",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			domains, err := op.accounts.Domains(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			out := make([]map[string]string, len(domains))
			for i, d := range domains {
				out[i] = map[string]string{"domain_id": d.ID, "domain": d.Name, "created_at": ts(d.CreatedAt)}
			}
			return s.print(cmd, out, func(w io.Writer) {
				for _, d := range domains {
					fmt.Fprintln(w, d.Name)
				}
			})
		}),
	}
	list.Flags().StringVar(&accountID, "account", "", "account id (required)")
	_ = list.MarkFlagRequired("account")

	var mxHost string
	dns := &cobra.Command{
		Use:   "dns",
		Short: "Print the DNS records a domain publishes to receive email through the SMTP listener",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mxHost == "" {
				return fmt.Errorf("give --smtp-hostname (SWITCHBOARD_SMTP_HOSTNAME): the public name of the host running --smtp-listen on port 25")
			}
			d, err := account.NormalizeDomain(domain)
			if err != nil {
				return fmt.Errorf("--domain: %w", err)
			}
			records := []map[string]string{
				{"name": d, "type": "MX", "value": "10 " + mxHost + "."},
				{"name": "_dmarc." + d, "type": "TXT", "value": "v=DMARC1; p=quarantine"},
			}
			return s.print(cmd, records, func(w io.Writer) {
				for _, r := range records {
					fmt.Fprintf(w, "%s. IN %s %s\n", r["name"], r["type"], r["value"])
				}
			})
		},
	}
	dns.Flags().StringVar(&domain, "domain", "", "the service email domain or a custom domain (required)")
	dns.Flags().StringVar(&mxHost, "smtp-hostname", "", "public name of the host running the SMTP listener")
	_ = dns.MarkFlagRequired("domain")
	cmd.AddCommand(add, list, dns)
	return cmd
}
