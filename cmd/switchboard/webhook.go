package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/application/webhooks"
)

type webhookJSON struct {
	AccountID      string   `json:"account_id"`
	URL            string   `json:"url"`
	Enabled        bool     `json:"enabled"`
	Events         []string `json:"events"`
	Secret         string   `json:"secret,omitempty"`
	DisabledReason string   `json:"disabled_reason,omitempty"`
	UpdatedAt      string   `json:"updated_at"`
}

func webhookOut(v webhooks.View) webhookJSON {
	out := webhookJSON{AccountID: v.Endpoint.AccountID, URL: v.Endpoint.URL, Enabled: v.Endpoint.Enabled, Secret: v.Secret,
		DisabledReason: v.Endpoint.DisabledReason, UpdatedAt: ts(v.Endpoint.UpdatedAt), Events: []string{}}
	for _, t := range v.Endpoint.Events {
		out.Events = append(out.Events, string(t))
	}
	return out
}

func printWebhook(w io.Writer, v webhooks.View) {
	events := "all"
	if len(v.Endpoint.Events) > 0 {
		names := make([]string, len(v.Endpoint.Events))
		for i, t := range v.Endpoint.Events {
			names[i] = string(t)
		}
		events = strings.Join(names, ", ")
	}
	state := "enabled"
	if !v.Endpoint.Enabled {
		state = "disabled"
		if v.Endpoint.DisabledReason != "" && v.Endpoint.DisabledReason != "disabled" {
			state += " (" + v.Endpoint.DisabledReason + ")"
		}
	}
	fmt.Fprintf(w, "webhook of %s: %s, %s, events: %s\n", v.Endpoint.AccountID, v.Endpoint.URL, state, events)
	if v.Secret != "" {
		fmt.Fprintf(w, "signing secret: %s\n(shown only now; it is stored encrypted)\n", v.Secret)
	}
}

func newWebhookCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "webhook", Short: "Set, show and rotate an account's webhook"}
	var (
		accountID, url, secret string
		events                 []string
		disabled               bool
	)
	set := &cobra.Command{
		Use:   "set",
		Short: "Set an account's webhook URL, event types, enabled flag and signing secret (the first time without --secret prints the one it made)",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			svc := op.webhooks
			enabled := !disabled
			in := webhooks.PutInput{AccountID: accountID, URL: url, Enabled: &enabled, Events: events}
			if cmd.Flags().Changed("secret") {
				in.Secret = &secret
			}
			v, err := svc.Put(cmd.Context(), in)
			if err != nil {
				return err
			}
			return s.print(cmd, webhookOut(v), func(w io.Writer) { printWebhook(w, v) })
		}),
	}
	sf := set.Flags()
	sf.StringVar(&url, "url", "", "the https:// URL deliveries are posted to (required)")
	sf.StringSliceVar(&events, "events", nil, "event types to deliver, comma-separated (default: all)")
	sf.BoolVar(&disabled, "disabled", false, "save the webhook disabled")
	secretVar(sf, &secret, "secret", "a signing secret of your choosing, 24 to 256 characters (an A1Base template's API secret); the current one signs beside it for 24 hours")
	sf.StringVar(&s.allowPrivateURLs, "allow-private-urls", "", "comma-separated CIDR ranges the URL may point into (self-hosted setups)")
	_ = set.MarkFlagRequired("url")

	show := &cobra.Command{
		Use:   "show",
		Short: "Show an account's webhook",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			svc := op.webhooks
			v, err := svc.Get(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			return s.print(cmd, webhookOut(v), func(w io.Writer) { printWebhook(w, v) })
		}),
	}
	rotate := &cobra.Command{
		Use:   "rotate-secret",
		Short: "Make a new signing secret; the old one keeps signing for 24 hours",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			svc := op.webhooks
			v, err := svc.RotateSecret(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			return s.print(cmd, webhookOut(v), func(w io.Writer) { printWebhook(w, v) })
		}),
	}
	for _, c := range []*cobra.Command{set, show, rotate} {
		c.Flags().StringVar(&accountID, "account", "", "account id (required)")
		_ = c.MarkFlagRequired("account")
		cmd.AddCommand(c)
	}
	return cmd
}
