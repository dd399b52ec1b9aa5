package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// newRetentionCommand shows or sets an account's history retention.
func newRetentionCommand(s *settings) *cobra.Command {
	var (
		accountID   string
		days        int
		useDefault  bool
		messageDays int
		keepAll     bool
	)
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Show or set how long an account's history (events, webhook deliveries, cron executions, the sandbox mailbox) and its messages are kept",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			ctx := cmd.Context()
			setDays := cmd.Flags().Changed("days")
			if setDays && useDefault {
				return fmt.Errorf("give --days or --default, not both")
			}
			setMessages := cmd.Flags().Changed("message-days")
			if setMessages && keepAll {
				return fmt.Errorf("give --message-days or --keep-messages, not both")
			}
			a, err := op.accounts.Account(ctx, accountID)
			switch {
			case err != nil:
				return err
			case setDays:
				a, err = op.accounts.SetHistoryRetention(ctx, accountID, &days, "days")
			case useDefault:
				a, err = op.accounts.SetHistoryRetention(ctx, accountID, nil, "days")
			}
			if err != nil {
				return err
			}
			switch {
			case setMessages:
				a, err = op.accounts.SetMessageRetention(ctx, accountID, &messageDays, "message-days")
			case keepAll:
				a, err = op.accounts.SetMessageRetention(ctx, accountID, nil, "message-days")
			}
			if err != nil {
				return err
			}
			var messages any
			kept := "kept for good (no message retention)"
			if a.MessageRetentionDays > 0 {
				messages = a.MessageRetentionDays
				kept = "kept " + describePeriod(a.MessageRetention())
			}
			period := op.accounts.HistoryRetention(a)
			source := "server"
			if a.HistoryRetentionDays > 0 {
				source = "account"
			}
			return s.print(cmd, map[string]any{
				"account_id": a.ID, "history_retention_days": float64(period) / float64(account.Day), "history_retention_source": source,
				"message_retention_days": messages,
			}, func(w io.Writer) {
				fmt.Fprintf(w, "account:    %s (%s)\nhistory:    kept %s (%s)\nmessages:   %s\n", a.ID, a.Name, describePeriod(period), describeSource(source), kept)
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&accountID, "account", "", "account id (required)")
	f.IntVar(&days, "days", 0, "keep the account's history this many days (1 to 36500)")
	f.BoolVar(&useDefault, "default", false, "follow the server's --history-retention again")
	f.IntVar(&messageDays, "message-days", 0, "delete the account's messages and emails once this many days old (1 to 36500)")
	f.BoolVar(&keepAll, "keep-messages", false, "keep the account's messages and emails for good again (no message retention, the default)")
	periodVar(f, &s.cfg.HistoryRetention, "history-retention", "the server's history retention, to show for accounts that follow it")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

// describePeriod writes a period in days when it is whole days.
func describePeriod(d time.Duration) string {
	if d%account.Day == 0 {
		if n := d / account.Day; n != 1 {
			return fmt.Sprintf("%d days", n)
		}
		return "1 day"
	}
	return d.String()
}

func describeSource(source string) string {
	if source == "account" {
		return "the account's own period"
	}
	return "the server's --history-retention"
}
