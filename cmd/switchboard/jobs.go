package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newJobsCommand(s *settings) *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Inspect and re-run dead background jobs"}
	var (
		kind  string
		limit int
	)
	dead := &cobra.Command{
		Use:   "dead",
		Short: "List jobs that ran out of attempts, newest first, with their last error",
		Args:  cobra.NoArgs,
		RunE: s.withOperator(func(cmd *cobra.Command, _ []string, op *operator) error {
			list, err := op.db.JobQueue().DeadJobs(cmd.Context(), kind, limit)
			if err != nil {
				return err
			}
			out := make([]map[string]any, len(list))
			for i, j := range list {
				out[i] = map[string]any{"job_id": j.ID, "kind": j.Kind, "attempts": j.Attempt,
					"last_error": j.LastError, "finished_at": ts(j.FinishedAt), "unique_key": j.UniqueKey}
			}
			return s.print(cmd, out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tKIND\tATTEMPTS\tFINISHED\tLAST ERROR")
				for _, j := range list {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", j.ID, j.Kind, j.Attempt, ts(j.FinishedAt), truncate(j.LastError, 100))
				}
				tw.Flush()
			})
		}),
	}
	dead.Flags().StringVar(&kind, "kind", "", "only jobs of this kind")
	dead.Flags().IntVar(&limit, "limit", 50, "at most this many")

	rerun := &cobra.Command{
		Use:   "rerun JOB_ID",
		Short: "Make a dead job pending again, with a fresh set of attempts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("job id %q is not a number", args[0])
			}
			op, done, err := s.openOperator(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if err := op.db.JobQueue().RerunJob(cmd.Context(), id); err != nil {
				return err
			}
			return s.print(cmd, map[string]any{"job_id": id, "state": "available"}, func(w io.Writer) {
				fmt.Fprintf(w, "job %d will run again\n", id)
			})
		},
	}
	cmd.AddCommand(dead, rerun)
	return cmd
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
