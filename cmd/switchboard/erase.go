package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/domain/erasure"
)

// newEraseCommand erases one person of an account.
func newEraseCommand(s *settings) *cobra.Command {
	var accountID string
	values := map[erasure.Kind]*string{}
	flags := []struct {
		name string
		kind erasure.Kind
		help string
	}{
		{"contact", erasure.Contact, "the person's contact id (con_…)"},
		{"phone", erasure.Phone, "the person's phone number (E.164), whether or not a contact holds it"},
		{"user-id", erasure.UserID, "the person's WhatsApp or Telegram user id, or Telegram @username"},
		{"email", erasure.Email, "the person's email address: the emails from and to it and the sandbox mail"},
	}
	cmd := &cobra.Command{
		Use:   "erase",
		Short: "Erase everything stored about one person of an account (messages, threads, contact, events, deliveries, emails), keeping an audit record without the content",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			var id erasure.Identifier
			var given []string
			for _, f := range flags {
				if cmd.Flags().Changed(f.name) {
					given = append(given, "--"+f.name)
					id = erasure.Identifier{Kind: f.kind, Value: *values[f.kind]}
				}
			}
			if len(given) != 1 {
				return fmt.Errorf("give exactly one of --contact, --phone, --user-id or --email")
			}
			rec, err := op.erasure.Erase(cmd.Context(), apperasure.Request{AccountID: accountID, ID: id, RequestedBy: "cli", ValuePath: []any{strings.TrimPrefix(given[0], "--")}})
			if err != nil {
				return err
			}
			counts := rec.Counts
			if counts == nil {
				counts = map[string]int{}
			}
			return s.print(cmd, map[string]any{
				"erasure_id": rec.ID, "account_id": rec.AccountID, "requested_by": rec.RequestedBy, "identifier_kind": string(rec.Kind),
				"identifier_hash": rec.IdentifierHash, "counts": counts, "total": rec.Total(), "created_at": ts(rec.At),
			}, func(w io.Writer) {
				fmt.Fprintf(w, "erasure:  %s\naccount:  %s\nerased:   %d rows\n", rec.ID, rec.AccountID, rec.Total())
				tables := make([]string, 0, len(counts))
				for t := range counts {
					tables = append(tables, t)
				}
				slices.Sort(tables)
				for _, t := range tables {
					fmt.Fprintf(w, "  %-22s %d\n", t, counts[t])
				}
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&accountID, "account", "", "account id (required)")
	for _, fl := range flags {
		values[fl.kind] = f.String(fl.name, "", fl.help)
	}
	_ = cmd.MarkFlagRequired("account")
	return cmd
}
