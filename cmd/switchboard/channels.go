package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// providerFlags are the provider settings `numbers add` takes as flags;
// they are sealed with the other settings.
type providerFlags struct {
	botToken, inbound                                  string
	phoneNumberID, accessToken, appSecret, verifyToken string
	apiBaseURL, graphVersion, wabaID, appID            string
}

func (p *providerFlags) register(f *pflag.FlagSet) {
	secretVar(f, &p.botToken, "bot-token", "telegram: the bot token from @BotFather")
	f.StringVar(&p.inbound, "inbound", "", "telegram: webhook or polling (default: webhook when the server has --public-url)")
	f.StringVar(&p.phoneNumberID, "phone-number-id", "", "whatsapp-cloud: the Cloud API phone number id")
	secretVar(f, &p.accessToken, "access-token", "whatsapp-cloud: a system user access token")
	secretVar(f, &p.appSecret, "app-secret", "whatsapp-cloud: the Meta app secret (verifies webhook signatures)")
	secretVar(f, &p.verifyToken, "verify-token", "whatsapp-cloud: the verify token typed into the app's webhook settings")
	f.StringVar(&p.apiBaseURL, "api-base-url", "", "telegram, whatsapp-cloud: the provider API's base URL (a proxy or a test server)")
	f.StringVar(&p.graphVersion, "graph-version", "", "whatsapp-cloud: the Graph API version (default "+whatsapp.DefaultVersion+")")
	f.StringVar(&p.wabaID, "waba-id", "", "whatsapp-cloud: the WhatsApp Business Account id, whose message templates the number sends (optional; needed to sync templates)")
	f.StringVar(&p.appID, "app-id", "", "whatsapp-cloud: the Meta app id, whose Resumable Upload API takes the number's profile picture (optional; needed to set it)")
}

// apply adds the flags to settings and checks that the provider has what
// it needs (a provider that cannot serve the service is the number
// check's to report).
func (p *providerFlags) apply(provider, service string, settings map[string]string) error {
	set := func(key, value string) {
		if value != "" {
			settings[key] = value
		}
	}
	if p.apiBaseURL != "" {
		u, err := url.Parse(p.apiBaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("--api-base-url must be an absolute http(s) URL")
		}
	}
	var missing []string
	need := func(key, flag string) {
		if settings[key] == "" {
			missing = append(missing, flag)
		}
	}
	switch account.Provider(provider) {
	case account.ProviderTelegram, account.ProviderWhatsAppCloud:
		if _, err := account.ParseProvider(provider, account.Service(service)); err != nil {
			return nil
		}
	}
	switch account.Provider(provider) {
	case account.ProviderTelegram:
		set(telegram.SettingBotToken, p.botToken)
		set(telegram.SettingAPIBaseURL, p.apiBaseURL)
		if p.inbound != "" && p.inbound != telegram.ModeWebhook && p.inbound != telegram.ModePolling {
			return fmt.Errorf("--inbound must be webhook or polling")
		}
		set(telegram.SettingInbound, p.inbound)
		need(telegram.SettingBotToken, "--bot-token")
	case account.ProviderWhatsAppCloud:
		set(whatsapp.SettingPhoneNumberID, p.phoneNumberID)
		set(whatsapp.SettingAccessToken, p.accessToken)
		set(whatsapp.SettingAppSecret, p.appSecret)
		set(whatsapp.SettingVerifyToken, p.verifyToken)
		set(whatsapp.SettingAPIBaseURL, p.apiBaseURL)
		set(whatsapp.SettingGraphVersion, p.graphVersion)
		set(whatsapp.SettingWABAID, p.wabaID)
		set(whatsapp.SettingAppID, p.appID)
		need(whatsapp.SettingPhoneNumberID, "--phone-number-id")
		need(whatsapp.SettingAccessToken, "--access-token")
		need(whatsapp.SettingAppSecret, "--app-secret")
		need(whatsapp.SettingVerifyToken, "--verify-token")
	default:
		if *p != (providerFlags{}) {
			return fmt.Errorf("provider settings flags apply to --provider telegram or whatsapp-cloud")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--provider %s needs %s", provider, strings.Join(missing, ", "))
	}
	return nil
}

// checkResult is what `numbers check` finds about one number.
type checkResult struct {
	NumberID string   `json:"number_id"`
	Number   string   `json:"number"`
	Provider string   `json:"provider"`
	OK       bool     `json:"ok"`
	Identity string   `json:"identity,omitempty"`
	Inbound  string   `json:"inbound,omitempty"`
	Problems []string `json:"problems"`
}

func newNumbersCheckCommand(s *settings) *cobra.Command {
	var accountID, number string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check agent numbers against their provider (Telegram getMe, WhatsApp phone number lookup)",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			numbers, err := op.accounts.Numbers(cmd.Context(), accountID)
			if err != nil {
				return err
			}
			var results []checkResult
			for _, n := range numbers {
				if number != "" && n.ID != number && n.Number != number {
					continue
				}
				r := checkResult{NumberID: n.ID, Number: n.Number, Provider: string(n.Provider), Problems: []string{}}
				settings, err := op.accounts.NumberSettings(n)
				if err != nil {
					r.Problems = append(r.Problems, "the settings cannot be opened with this server key: "+err.Error())
				} else {
					ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
					checkNumber(ctx, n, settings, s.cfg.PublicURL, &r)
					cancel()
				}
				if !n.Enabled {
					r.Problems = append(r.Problems, "the number is disabled")
				}
				r.OK = len(r.Problems) == 0
				results = append(results, r)
			}
			if len(results) == 0 {
				return fmt.Errorf("no agent number %q on account %s", number, accountID)
			}
			bad := 0
			for _, r := range results {
				if !r.OK {
					bad++
				}
			}
			err = s.print(cmd, results, func(w io.Writer) {
				for _, r := range results {
					state := "ok"
					if !r.OK {
						state = "PROBLEMS"
					}
					fmt.Fprintf(w, "%s %s (%s): %s\n", r.NumberID, r.Number, r.Provider, state)
					if r.Identity != "" {
						fmt.Fprintf(w, "  identity: %s\n", r.Identity)
					}
					if r.Inbound != "" {
						fmt.Fprintf(w, "  inbound:  %s\n", r.Inbound)
					}
					for _, p := range r.Problems {
						fmt.Fprintf(w, "  - %s\n", p)
					}
				}
			})
			if err == nil && bad > 0 {
				err = fmt.Errorf("%d of %d numbers have problems", bad, len(results))
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&accountID, "account", "", "account id (required)")
	cmd.Flags().StringVar(&number, "number", "", "number id or E.164 number (default: every number of the account)")
	cmd.Flags().StringVar(&s.cfg.PublicURL, "public-url", "", "the server's public URL, to check the Telegram webhook against")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

// checkNumber asks the provider who the settings say the number is.
func checkNumber(ctx context.Context, n account.Number, settings map[string]string, publicURL string, r *checkResult) {
	switch n.Provider {
	case account.ProviderSandbox:
		r.Identity = "sandbox (talks to no real channel)"
	case account.ProviderTelegram:
		c := telegram.NewClient()
		me, err := c.GetMe(ctx, settings)
		if err != nil {
			r.Problems = append(r.Problems, "getMe failed: "+err.Error())
			return
		}
		r.Identity = fmt.Sprintf("bot @%s (%s, id %d)", me.Username, me.Name(), me.ID)
		info, err := c.GetWebhookInfo(ctx, settings)
		if err != nil {
			r.Problems = append(r.Problems, "getWebhookInfo failed: "+err.Error())
			return
		}
		mode := settings[telegram.SettingInbound]
		switch {
		case info.URL == "" && mode == telegram.ModeWebhook:
			r.Problems = append(r.Problems, "no webhook is set: start the server with --public-url so that it sets one")
		case info.URL == "":
			r.Inbound = "no webhook: updates are polled with getUpdates"
		default:
			r.Inbound = "webhook " + info.URL
			want := strings.TrimRight(publicURL, "/") + telegram.WebhookPath(n.ID)
			if publicURL != "" && info.URL != want {
				r.Problems = append(r.Problems, "the webhook points at "+info.URL+", not "+want)
			}
			if mode == telegram.ModePolling {
				r.Problems = append(r.Problems, "a webhook is set but the number polls: the server deletes it when the poller starts")
			}
		}
		if info.LastErrorMessage != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("Telegram's last webhook error (%s): %s",
				time.Unix(info.LastErrorDate, 0).UTC().Format(time.RFC3339), info.LastErrorMessage))
		}
	case account.ProviderWhatsAppCloud:
		for _, key := range []string{whatsapp.SettingAppSecret, whatsapp.SettingVerifyToken} {
			if settings[key] == "" {
				r.Problems = append(r.Problems, "the "+key+" setting is missing: inbound webhooks cannot be verified")
			}
		}
		p, err := whatsapp.NewClient().LookupNumber(ctx, settings)
		if err != nil {
			r.Problems = append(r.Problems, "phone number lookup failed: "+err.Error())
			return
		}
		r.Identity = fmt.Sprintf("%s %q (quality %s)", p.DisplayPhoneNumber, p.VerifiedName, p.QualityRating)
		if whatsapp.Digits(p.DisplayPhoneNumber) != whatsapp.Digits(n.Number) {
			r.Problems = append(r.Problems, "phone_number_id "+settings[whatsapp.SettingPhoneNumberID]+" is "+p.DisplayPhoneNumber+", not "+n.Number)
		}
		base := strings.TrimRight(publicURL, "/")
		if base == "" {
			base = "https://<public-url>"
		}
		r.Inbound = "webhook " + base + "/v1/providers/whatsapp/" + n.ID + "/webhook (the callback URL to set in the Meta app)"
	}
}
