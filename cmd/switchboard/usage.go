package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// unknownCommand answers a command name that does not exist: the error,
// and the usage of the command it was given to.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return &usageError{msg: msg, usage: cmd.UsageString()}
}

// usageError is a command line that names no command: main prints the
// message and the usage, and exits 2.
type usageError struct {
	msg   string
	usage string
}

func (e *usageError) Error() string { return e.msg }

// groupAnnotation marks a command that only groups others: it reads no
// setting, so a mistyped subcommand is reported before a bad setting.
const groupAnnotation = "switchboard:group"

// catchUnknownCommands makes every command that only groups others (root,
// accounts, keys, …) answer an unknown subcommand with a usage error:
// cobra alone exits 0 with the help for `switchboard accounts bogus`.
func catchUnknownCommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = unknownCommand
		cmd.SuggestionsMinimumDistance = 2
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[groupAnnotation] = "true"
	}
	for _, c := range cmd.Commands() {
		catchUnknownCommands(c)
	}
}
