package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-dev/switchboard/bootstrap"
)

func newMigrateCommand(s *settings) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations (safe to run from several replicas at once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			applied, err := bootstrap.Migrate(cmd.Context(), s.cfg)
			if err != nil {
				return err
			}
			if applied == nil {
				applied = []string{}
			}
			return s.print(cmd, map[string]any{"status": "ok", "applied": applied, "pending": 0}, func(w io.Writer) {
				if len(applied) == 0 {
					fmt.Fprintln(w, "nothing to apply: the database is up to date")
					return
				}
				fmt.Fprintf(w, "applied %d migration%s:\n", len(applied), plural(len(applied)))
				for _, name := range applied {
					fmt.Fprintln(w, "  "+name)
				}
			})
		},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
